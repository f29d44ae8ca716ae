#include "bench/cuda/gpu_timeline.h"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cuda_runtime_api.h"

namespace hgeval::bench {
namespace {

struct Activity {
  uint64_t start = 0, end = 0;
  std::string name;
  enum Kind { kKernel, kCopy, kMemset } kind = kKernel;
};

// A host call into the CUDA runtime or driver (its name is CUPTI's, static).
struct ApiCall {
  uint64_t start = 0, end = 0;
  const char* name = "?";
};

struct Recorder {
  std::mutex mu;
  // ShortName of each kernel's mangled name, made once: a decode trace holds thousands
  // of launches of a few dozen kernels.
  std::map<std::string, std::string, std::less<>> short_names;
  std::vector<Activity> device;
  std::vector<ApiCall> api;
};

Recorder& TheRecorder() {
  static Recorder r;
  return r;
}

// A kernel's name without its return type, namespaces, template arguments and parameters.
std::string ShortName(const char* mangled) {
  if (mangled == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && d != nullptr ? d : mangled;
  std::free(d);
  for (const char* anon : {"(anonymous namespace)::", "<unnamed>::"}) {
    for (size_t p; (p = s.find(anon)) != std::string::npos;) s.erase(p, std::strlen(anon));
  }
  if (const size_t p = s.find_first_of("<("); p != std::string::npos) s.resize(p);
  if (const size_t p = s.rfind("::"); p != std::string::npos) s = s.substr(p + 2);
  if (const size_t p = s.rfind(' '); p != std::string::npos) s = s.substr(p + 1);
  return s.substr(0, 60);
}

// CUPTI's record buffers, allocated and touched before a trace starts: a buffer first
// asked for inside the traced call would put its page faults into the host's lead (a few
// ms for 8 MB in a sandboxed kernel).
constexpr size_t kBufferBytes = 8 << 20;
constexpr int kBuffers = 4;

struct BufferPool {
  std::mutex mu;
  std::vector<uint8_t*> free;
};

BufferPool& Buffers() {
  static BufferPool* pool = [] {
    auto* p = new BufferPool;
    for (int i = 0; i < kBuffers; ++i) {
      auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
      std::memset(b, 0, kBufferBytes);
      p->free.push_back(b);
    }
    return p;
  }();
  return *pool;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  BufferPool& pool = Buffers();
  std::lock_guard<std::mutex> lock(pool.mu);
  if (pool.free.empty()) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  } else {
    *buffer = pool.free.back();
    pool.free.pop_back();
  }
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Recorder& r = TheRecorder();
  std::lock_guard<std::mutex> lock(r.mu);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        const std::string_view mangled = k->name != nullptr ? k->name : "";
        auto it = r.short_names.find(mangled);
        if (it == r.short_names.end()) {
          it = r.short_names.emplace(std::string(mangled), ShortName(k->name)).first;
        }
        r.device.push_back({k->start, k->end, it->second, Activity::kKernel});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        r.device.push_back({m->start, m->end,
                            absl::StrCat("memcpy kind ", m->copyKind, " ", m->bytes, " B"),
                            Activity::kCopy});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        r.device.push_back(
            {m->start, m->end, absl::StrCat("memset ", m->bytes, " B"), Activity::kMemset});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
        const char* name = nullptr;
        cuptiGetCallbackName(rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                      : CUPTI_CB_DOMAIN_DRIVER_API,
                             a->cbid, &name);
        r.api.push_back({a->start, a->end, name != nullptr ? name : "?"});
        break;
      }
      default:
        break;
    }
  }
  BufferPool& pool = Buffers();
  std::lock_guard<std::mutex> pool_lock(pool.mu);
  pool.free.push_back(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                         CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

absl::Status Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return absl::OkStatus();
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  return absl::InternalError(absl::StrCat(what, ": ", msg != nullptr ? msg : "?"));
}

// The length of the union of [start, end) intervals sorted by start.
double UnionNs(const std::vector<Activity>& acts, bool kernels_only) {
  double sum = 0;
  uint64_t cur_s = 0, cur_e = 0;
  bool open = false;
  for (const Activity& a : acts) {
    if (kernels_only && a.kind != Activity::kKernel) continue;
    if (open && a.start <= cur_e) {
      cur_e = std::max(cur_e, a.end);
      continue;
    }
    if (open) sum += static_cast<double>(cur_e - cur_s);
    cur_s = a.start;
    cur_e = a.end;
    open = true;
  }
  if (open) sum += static_cast<double>(cur_e - cur_s);
  return sum;
}

// StepKernels of `acts` (sorted by start): the steps' kernel sequences, each opened by a
// host-to-device copy, averaged position by position where they all match; else the
// call's kernels in order as one step.
std::vector<TimelineKernel> StepKernels(const std::vector<Activity>& acts) {
  std::vector<std::vector<const Activity*>> steps(1);
  for (const Activity& a : acts) {
    if (a.kind == Activity::kCopy && a.name.starts_with("memcpy kind 1 ") &&
        !steps.back().empty()) {
      steps.emplace_back();
    }
    if (a.kind == Activity::kKernel) steps.back().push_back(&a);
  }
  const bool alike = std::all_of(steps.begin(), steps.end(), [&](const auto& step) {
    return std::equal(step.begin(), step.end(), steps.front().begin(), steps.front().end(),
                      [](const Activity* x, const Activity* y) { return x->name == y->name; });
  });
  if (!alike) {
    std::vector<const Activity*> all;
    for (const auto& step : steps) all.insert(all.end(), step.begin(), step.end());
    steps = {std::move(all)};
  }
  std::vector<TimelineKernel> mean;
  for (const Activity* k : steps.front()) mean.push_back({k->name, 0, 0});
  for (const auto& step : steps) {
    for (size_t i = 0; i < step.size(); ++i) {
      ++mean[i].count;
      mean[i].ms += (step[i]->end - step[i]->start) * 1e-6;
    }
  }
  for (TimelineKernel& k : mean) k.ms /= static_cast<double>(k.count);
  return mean;
}

}  // namespace

absl::StatusOr<TimelineSummary> TraceCall(const std::function<void()>& call) {
  Buffers();  // touched before the first trace
  static const absl::Status registered =
      Check(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted),
            "cuptiActivityRegisterCallbacks");
  if (!registered.ok()) {
    call();  // the caller's work runs either way
    return registered;
  }
  Recorder& rec = TheRecorder();
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    rec.device.clear();
    rec.api.clear();
  }
  cudaDeviceSynchronize();
  for (CUpti_ActivityKind k : kKinds) {
    if (absl::Status s = Check(cuptiActivityEnable(k), "cuptiActivityEnable"); !s.ok()) {
      call();
      return s;
    }
  }
  uint64_t t0 = 0, t1 = 0;
  cuptiGetTimestamp(&t0);
  call();
  cuptiGetTimestamp(&t1);
  cudaDeviceSynchronize();
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  if (absl::Status s =
          Check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
      !s.ok()) {
    return s;
  }

  std::lock_guard<std::mutex> lock(rec.mu);
  std::vector<Activity> acts;
  for (Activity& a : rec.device) {
    if (a.end > t0 && a.start < t1) acts.push_back(std::move(a));
  }
  std::sort(acts.begin(), acts.end(),
            [](const Activity& a, const Activity& b) { return a.start < b.start; });
  TimelineSummary s;
  s.wall_ms = (t1 - t0) * 1e-6;
  for (const Activity& a : acts) {
    (a.kind == Activity::kKernel ? s.kernels : a.kind == Activity::kCopy ? s.copies : s.memsets)++;
  }
  if (!acts.empty()) {
    uint64_t last_end = 0;
    for (const Activity& a : acts) last_end = std::max(last_end, a.end);
    s.lead_ms = acts.front().start > t0 ? (acts.front().start - t0) * 1e-6 : 0;
    s.gpu_span_ms = (last_end - acts.front().start) * 1e-6;
    s.busy_ms = UnionNs(acts, false) * 1e-6;
    s.kernel_ms = UnionNs(acts, true) * 1e-6;
    s.idle_ms = s.gpu_span_ms - s.busy_ms;
    s.tail_ms = t1 > last_end ? (t1 - last_end) * 1e-6 : 0;
    std::vector<TimelineGap> gaps;
    uint64_t reach = acts.front().end;
    for (size_t i = 1; i < acts.size(); ++i) {
      if (acts[i].start > reach) {
        const double us = (acts[i].start - reach) * 1e-3;
        if (us > 5) {
          ++s.gaps_over_5us;
          s.gaps_over_5us_ms += us * 1e-3;
        }
        gaps.push_back({us, acts[i - 1].name, acts[i].name});
      }
      reach = std::max(reach, acts[i].end);
    }
    std::sort(gaps.begin(), gaps.end(),
              [](const TimelineGap& a, const TimelineGap& b) { return a.us > b.us; });
    gaps.resize(std::min<size_t>(gaps.size(), 8));
    s.longest_gaps = std::move(gaps);
    std::map<std::string, TimelineKernel> by_name;
    for (const Activity& a : acts) {
      TimelineKernel& k = by_name[a.name];
      k.name = a.name;
      ++k.count;
      k.ms += (a.end - a.start) * 1e-6;
    }
    for (auto& [name, k] : by_name) s.top_kernels.push_back(std::move(k));
    std::sort(s.top_kernels.begin(), s.top_kernels.end(),
              [](const TimelineKernel& a, const TimelineKernel& b) { return a.ms > b.ms; });
    s.top_kernels.resize(std::min<size_t>(s.top_kernels.size(), 16));
    s.step_kernels = StepKernels(acts);
  }
  // The host's calls before the GPU's first activity: what the lead is spent in.
  const uint64_t first = acts.empty() ? t1 : acts.front().start;
  std::sort(rec.api.begin(), rec.api.end(),
            [](const ApiCall& a, const ApiCall& b) { return a.start < b.start; });
  std::map<std::string, double> api_ns;  // every call's time, by name
  for (const ApiCall& a : rec.api) {
    api_ns[a.name] += static_cast<double>(a.end - a.start);
    if (a.start < t0 || a.start >= first || s.lead_calls.size() >= 12) continue;
    s.lead_calls.push_back({(a.start - t0) * 1e-3, (a.end - a.start) * 1e-3, a.name});
  }
  for (const auto& [name, ns] : api_ns) s.api.emplace_back(name, ns * 1e-6);
  std::sort(s.api.begin(), s.api.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  s.api.resize(std::min<size_t>(s.api.size(), 8));
  rec.device.clear();
  rec.api.clear();
  return s;
}

nlohmann::json TimelineSummary::ToJson() const {
  nlohmann::json j = {{"wall_ms", wall_ms},
                      {"lead_ms", lead_ms},
                      {"gpu_span_ms", gpu_span_ms},
                      {"busy_ms", busy_ms},
                      {"kernel_ms", kernel_ms},
                      {"idle_ms", idle_ms},
                      {"tail_ms", tail_ms},
                      {"kernels", kernels},
                      {"copies", copies},
                      {"memsets", memsets},
                      {"gaps_over_5us", gaps_over_5us},
                      {"gaps_over_5us_ms", gaps_over_5us_ms}};
  for (const TimelineGap& g : longest_gaps) {
    j["longest_gaps"].push_back({{"us", g.us}, {"before", g.before}, {"after", g.after}});
  }
  for (const TimelineCall& c : lead_calls) {
    j["lead_calls"].push_back({{"at_us", c.at_us}, {"us", c.us}, {"call", c.name}});
  }
  for (const TimelineKernel& k : top_kernels) {
    j["top_kernels"].push_back({{"name", k.name}, {"count", k.count}, {"ms", k.ms}});
  }
  for (const TimelineKernel& k : step_kernels) {
    j["step_kernels"].push_back({{"name", k.name}, {"steps", k.count}, {"us", k.ms * 1e3}});
  }
  for (const auto& [name, ms] : api) j["api_ms"][name] = ms;
  return j;
}

std::string TimelineSummary::ToText() const {
  std::string t = absl::StrFormat(
      "wall %.3f ms = lead %.3f + GPU span %.3f (busy %.3f, kernels %.3f, idle %.3f; %d gaps "
      "> 5 us: %.3f ms) + tail %.3f; %d kernels, %d copies, %d memsets\n",
      wall_ms, lead_ms, gpu_span_ms, busy_ms, kernel_ms, idle_ms, gaps_over_5us, gaps_over_5us_ms,
      tail_ms, kernels, copies, memsets);
  for (const TimelineGap& g : longest_gaps) {
    absl::StrAppendFormat(&t, "  gap %.1f us: %s -> %s\n", g.us, g.before, g.after);
  }
  for (const TimelineCall& c : lead_calls) {
    absl::StrAppendFormat(&t, "  lead call at +%.1f us: %s, %.1f us\n", c.at_us, c.name, c.us);
  }
  for (const TimelineKernel& k : top_kernels) {
    absl::StrAppendFormat(&t, "  %8.3f ms %5d x %7.1f us  %s\n", k.ms, k.count,
                          k.ms * 1e3 / static_cast<double>(k.count), k.name);
  }
  if (!step_kernels.empty()) {
    absl::StrAppendFormat(&t, "  a step: %d kernels, their means over %d steps in the JSON\n",
                          step_kernels.size(), step_kernels.front().count);
  }
  for (const auto& [name, ms] : api) {
    absl::StrAppendFormat(&t, "  host API %s: %.3f ms\n", name, ms);
  }
  return t;
}

}  // namespace hgeval::bench

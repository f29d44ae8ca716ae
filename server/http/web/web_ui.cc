#include "server/http/web/web_ui.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "server/http/http_gateway.h"
#include "server/http/web/embedded_files.h"
#include "server/http/web/series_curves.h"
#include "server/http/web/web_ui_data.h"

namespace hgeval::server::web {
namespace {

using Json = nlohmann::json;

constexpr absl::string_view kCookieName = "hgeval_ui_token";
// The header a cancel must carry: a cross-site form cannot set it, and a cross-site
// script would need a CORS preflight this server never grants.
constexpr absl::string_view kUiHeader = "x-hgeval-ui";

absl::string_view FindFile(absl::string_view name) {
  for (const EmbeddedFile* file = kEmbeddedFiles; !file->name.empty(); ++file) {
    if (absl::string_view(file->name.data(), file->name.size()) == name) {
      return absl::string_view(file->content.data(), file->content.size());
    }
  }
  return {};
}

std::string ContentType(absl::string_view name) {
  if (absl::EndsWith(name, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(name, ".css")) return "text/css; charset=utf-8";
  return "text/html; charset=utf-8";
}

std::string HtmlEscape(absl::string_view text) {
  return absl::StrReplaceAll(
      text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}, {"'", "&#39;"}});
}

HttpResponse JsonReply(const Json& value) {
  return HttpResponse{200, "application/json",
                      value.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

HttpResponse ErrorReply(const absl::Status& status) {
  HttpError error = ToHttpError(status);
  return HttpResponse{error.http_status, "application/json", std::move(error.body)};
}

// A page to return to after login: only this UI's own paths (no open redirect).
std::string SafeNext(const std::string& next) {
  if (!absl::StartsWith(next, "/ui") || absl::StrContains(next, "//") ||
      absl::StrContains(next, "\\") || next.find_first_of("\r\n\"'<>") != std::string::npos) {
    return "/ui";
  }
  return next;
}

int64_t IntParam(const HttpRequest& request, absl::string_view name, int64_t fallback) {
  int64_t value = 0;
  return absl::SimpleAtoi(request.QueryParam(name), &value) ? value : fallback;
}

bool Final(hgeval::v1::JobState state) {
  return state == hgeval::v1::JOB_STATE_SUCCEEDED || state == hgeval::v1::JOB_STATE_FAILED ||
         state == hgeval::v1::JOB_STATE_CANCELLED;
}

}  // namespace

WebUi::WebUi(hgeval::v1::JobService::StubInterface* jobs, const BearerAuth* auth,
             WebUiLimits limits)
    : jobs_(jobs), auth_(auth), limits_(limits) {}

bool WebUi::IsUiPath(const std::string& path) {
  return path == "/ui" || absl::StartsWith(path, "/ui/");
}

std::string WebUi::Authorization(const HttpRequest& request) {
  std::string header = request.Header("authorization");
  if (!header.empty()) return header;
  for (const auto& [name, value] : request.headers) {
    if (name != "cookie") continue;
    for (absl::string_view cookie : absl::StrSplit(value, ';')) {
      cookie = absl::StripAsciiWhitespace(cookie);
      // The cookie holds the token in hex: a token may hold ';' or ',' (any visible ASCII).
      if (absl::ConsumePrefix(&cookie, kCookieName) && absl::ConsumePrefix(&cookie, "=") &&
          !cookie.empty() && cookie.size() % 2 == 0 &&
          cookie.find_first_not_of("0123456789abcdef") == absl::string_view::npos) {
        return absl::StrCat("Bearer ", absl::HexStringToBytes(cookie));
      }
    }
  }
  return "";
}

bool WebUi::Authenticated(const HttpRequest& request) const {
  if (auth_ == nullptr || !auth_->enabled()) return true;
  const std::string authorization = Authorization(request);
  if (authorization.empty() || !CheckAuthorizationHeader(authorization).ok()) return false;
  const std::string_view value(authorization);
  return auth_->CheckValue(&value).ok();
}

std::optional<HttpResponse> WebUi::CheckHead(const HttpRequest& head) const {
  if (head.path == "/ui/login" || head.path == "/ui/style.css") return std::nullopt;
  if (Authenticated(head)) return std::nullopt;
  if (absl::StartsWith(head.path, "/ui/api/")) {
    return ErrorReply(absl::UnauthenticatedError(
        "the web UI's data needs the bearer token: log in at /ui/login or send "
        "'Authorization: Bearer <token>'"));
  }
  return LoginPage(401, "", head.target);
}

HttpResponse WebUi::Page(const std::string& name) const {
  return HttpResponse{200, ContentType(name), std::string(FindFile(name))};
}

HttpResponse WebUi::LoginPage(int status, const std::string& message,
                              const std::string& next) const {
  std::string page =
      absl::StrReplaceAll(FindFile("login.html"),
                          {{"{{message}}", HtmlEscape(message)},
                           {"{{next}}", HtmlEscape(SafeNext(next))},
                           {"{{auth}}", auth_ != nullptr && auth_->enabled()
                                            ? "This server needs its bearer token."
                                            : "This server has no token: every page is open."}});
  return HttpResponse{status, "text/html; charset=utf-8", std::move(page)};
}

HttpResponse WebUi::Login(const HttpRequest& request) const {
  // The form's fields, decoded as a query string is.
  HttpRequest form;
  form.query = request.body;
  const std::string token = form.QueryParam("token");
  const std::string next = SafeNext(form.QueryParam("next"));
  const std::string authorization = absl::StrCat("Bearer ", token);
  const std::string_view value(authorization);
  if (auth_ == nullptr || !auth_->enabled()) return LoginPage(200, "", next);
  if (token.empty() || !CheckAuthorizationHeader(authorization).ok() ||
      !auth_->CheckValue(&value).ok()) {
    return LoginPage(401, "That is not this server's token.", next);
  }
  HttpResponse response{
      200, "text/html; charset=utf-8",
      absl::StrCat("<!doctype html><meta http-equiv=\"refresh\" content=\"0;url=", HtmlEscape(next),
                   "\"><a href=\"", HtmlEscape(next), "\">continue</a>")};
  // In hex: a token may hold any visible ASCII, ';' and ',' included.
  response.headers.push_back(
      {"Set-Cookie", absl::StrCat(kCookieName, "=", absl::BytesToHexString(token),
                                  "; Path=/ui; HttpOnly; SameSite=Strict")});
  return response;
}

HttpResponse WebUi::Jobs(const HttpRequest& request) const {
  hgeval::v1::ListJobsRequest list_request;
  list_request.set_limit(static_cast<int32_t>(
      std::clamp<int64_t>(IntParam(request, "limit", 100), 1, limits_.max_listed_jobs)));
  hgeval::v1::ListJobsResponse list;
  auto context = NewCallContext(Authorization(request));
  absl::Status status = FromGrpcStatus(jobs_->ListJobs(context.get(), list_request, &list));
  if (!status.ok()) return ErrorReply(status);
  return JsonReply(JobListJson(list, absl::ToUnixSeconds(absl::Now())));
}

HttpResponse WebUi::Cancel(const HttpRequest& request) const {
  if (request.Header(kUiHeader) != "1") {
    HttpResponse refused = ErrorReply(absl::PermissionDeniedError(
        "a cancel from the web UI carries the header 'X-Hgeval-UI: 1'"));
    refused.status = 403;
    return refused;
  }
  hgeval::v1::CancelJobRequest cancel;
  cancel.set_job_id(request.QueryParam("id"));
  hgeval::v1::Job job;
  auto context = NewCallContext(Authorization(request));
  absl::Status status = FromGrpcStatus(jobs_->CancelJob(context.get(), cancel, &job));
  if (!status.ok()) return ErrorReply(status);
  return JsonReply(JobSummaryJson(job, absl::ToUnixSeconds(absl::Now())));
}

absl::StatusOr<hgeval::v1::Job> WebUi::GetJob(const std::string& id,
                                              const std::string& authorization) const {
  hgeval::v1::GetJobRequest get;
  get.set_job_id(id);
  hgeval::v1::Job job;
  auto context = NewCallContext(authorization);
  absl::Status status = FromGrpcStatus(jobs_->GetJob(context.get(), get, &job));
  if (!status.ok()) return status;
  return job;
}

absl::StatusOr<std::shared_ptr<const WebUi::Results>> WebUi::GetResults(
    const std::string& id, const std::string& authorization) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cached_ != nullptr && cached_->job.id() == id) return cached_;
  }
  // One load at a time: the UI's memory for results is one job's (bounded by
  // --http_max_response_bytes) however many pages ask at once, and the pages of one job
  // that ask together read and parse it once (the later ones find it cached).
  std::lock_guard<std::mutex> loading(load_mutex_);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cached_ != nullptr && cached_->job.id() == id) return cached_;
  }
  absl::StatusOr<hgeval::v1::Job> job = GetJob(id, authorization);
  if (!job.ok()) return job.status();
  auto results = std::make_shared<Results>();
  if (job->results_bytes() > limits_.max_response_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the job's results are ", job->results_bytes(), " bytes, over the web UI's limit of ",
        limits_.max_response_bytes,
        " (--http_max_response_bytes); fetch them with `hgeval job` or GetJobResults"));
  }
  if (job->results_json().empty() && job->results_bytes() > 0) {
    // Too large to travel inside the Job: streamed in pieces.
    hgeval::v1::GetJobRequest get;
    get.set_job_id(id);
    auto context = NewCallContext(authorization);
    auto reader = jobs_->GetJobResults(context.get(), get);
    hgeval::v1::JobResultsChunk chunk;
    while (reader->Read(&chunk)) {
      results->json_text += chunk.results_json();
      results->csv_text += chunk.results_csv();
    }
    absl::Status status = FromGrpcStatus(reader->Finish());
    if (!status.ok()) return status;
  } else {
    results->json_text = std::move(*job->mutable_results_json());
    results->csv_text = std::move(*job->mutable_results_csv());
  }
  job->clear_results_json();
  job->clear_results_csv();
  results->job = *std::move(job);
  if (!results->json_text.empty()) {
    results->json = Json::parse(results->json_text, nullptr, /*allow_exceptions=*/false);
    if (results->json.is_discarded())
      return absl::DataLossError("the job's results JSON is damaged");
  }
  if (Final(results->job.state())) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    cached_ = results;
  }
  return results;
}

HttpResponse WebUi::JobData(const HttpRequest& request) {
  absl::StatusOr<std::shared_ptr<const Results>> results =
      GetResults(request.QueryParam("id"), Authorization(request));
  if (!results.ok()) return ErrorReply(results.status());
  const Results& r = **results;
  Json answer = {{"job", JobSummaryJson(r.job, absl::ToUnixSeconds(absl::Now()))},
                 {"table", nullptr},
                 {"niah", nullptr}};
  if (!r.json.is_null()) {
    if (r.job.has_niah()) {
      answer["niah"] = NiahGridJson(r.json);
    } else {
      answer["table"] = ResultsTableJson(r.json);
      answer["has_samples"] = r.json.contains("samples");
      if (r.json.contains("config")) answer["config"] = r.json["config"];
    }
  }
  return JsonReply(answer);
}

HttpResponse WebUi::Download(const HttpRequest& request, bool csv) {
  absl::StatusOr<std::shared_ptr<const Results>> results =
      GetResults(request.QueryParam("id"), Authorization(request));
  if (!results.ok()) return ErrorReply(results.status());
  const Results& r = **results;
  if (r.json_text.empty()) {
    return ErrorReply(absl::FailedPreconditionError("the job has no results yet"));
  }
  if (!csv) return HttpResponse{200, "application/json", r.json_text};
  std::string text = r.job.has_niah() ? r.csv_text : ResultsTableCsv(r.json);
  return HttpResponse{200, "text/csv; charset=utf-8", std::move(text)};
}

HttpResponse WebUi::Samples(const HttpRequest& request) {
  absl::StatusOr<std::shared_ptr<const Results>> results =
      GetResults(request.QueryParam("id"), Authorization(request));
  if (!results.ok()) return ErrorReply(results.status());
  SamplesQuery query;
  query.task = request.QueryParam("task");
  query.contains = request.QueryParam("q");
  query.metric = request.QueryParam("metric");
  query.metric_value = request.QueryParam("value");
  query.page = IntParam(request, "page", 0);
  query.page_size = IntParam(request, "page_size", 20);
  return JsonReply(SamplesPageJson((*results)->json, query));
}

HttpResponse WebUi::SeriesList(const HttpRequest& request) const {
  hgeval::v1::ListSeriesRequest list_request;
  list_request.set_limit(static_cast<int32_t>(
      std::clamp<int64_t>(IntParam(request, "limit", 100), 1, limits_.max_listed_jobs)));
  hgeval::v1::ListSeriesResponse list;
  auto context = NewCallContext(Authorization(request));
  absl::Status status = FromGrpcStatus(jobs_->ListSeries(context.get(), list_request, &list));
  if (!status.ok()) return ErrorReply(status);
  Json series = Json::array();
  for (const hgeval::v1::Series& s : list.series()) {
    series.push_back({{"id", s.id()},
                      {"name", s.name()},
                      {"tasks", Json(std::vector<std::string>(s.tasks().begin(), s.tasks().end()))},
                      {"limit", s.limit()},
                      {"checkpoints", s.points_size()},
                      {"created_at", s.created_at()}});
  }
  return JsonReply({{"series", std::move(series)}, {"omitted", list.omitted()}});
}

HttpResponse WebUi::SeriesCurves(const HttpRequest& request) const {
  hgeval::v1::GetSeriesRequest get;
  get.set_series_id(request.QueryParam("id"));
  hgeval::v1::Series series;
  auto context = NewCallContext(Authorization(request));
  absl::Status status = FromGrpcStatus(jobs_->GetSeries(context.get(), get, &series));
  if (!status.ok()) return ErrorReply(status);
  tasks::series::FitOptions fit;
  fit.metric = request.QueryParam("metric");
  if (fit.metric.empty()) {
    absl::StatusOr<std::string> metric = tasks::series::DefaultFitMetric(
        std::vector<std::string>(series.tasks().begin(), series.tasks().end()));
    if (!metric.ok()) return ErrorReply(metric.status());
    fit.metric = *metric;
  }
  std::vector<tasks::series::Point> points;
  Json table = Json::array();
  for (const hgeval::v1::SeriesPoint& p : series.points()) {
    const hgeval::v1::SeriesCheckpoint& c = p.checkpoint();
    tasks::series::Point point = tasks::series::PointFromWire(p);
    auto value = point.metrics.find(fit.metric);
    table.push_back({{"model", c.model()},
                     {"architecture", c.architecture()},
                     {"parameters", c.parameters()},
                     {"tokens", c.tokens()},
                     {"compute", c.compute()},
                     {"step", c.step()},
                     {"job_id", p.job_id()},
                     {"state", JobStateName(p.state())},
                     {"requests_done", p.requests_done()},
                     {"requests_total", p.requests_total()},
                     {"value", value == point.metrics.end() ? Json() : Json(value->second)},
                     {"error", p.error()}});
    points.push_back(std::move(point));
  }
  Json answer = SeriesCurvesJson(points, fit);
  answer["series"] = {
      {"id", series.id()},
      {"name", series.name()},
      {"tasks", std::vector<std::string>(series.tasks().begin(), series.tasks().end())},
      {"limit", series.limit()},
      {"points_done", series.points_done()},
      {"checkpoints", series.points_size()}};
  answer["points"] = std::move(table);
  return JsonReply(answer);
}

std::vector<HttpListener::Route> WebUi::Routes() {
  std::vector<HttpListener::Route> routes;
  // Pages: one document whose script draws the page its path names.
  for (const char* path :
       {"/ui", "/ui/", "/ui/results", "/ui/compare", "/ui/niah", "/ui/samples", "/ui/series"}) {
    routes.push_back({"GET", path, false, [this](const HttpRequest&) { return Page("app.html"); }});
  }
  for (const char* file : {"app.js", "style.css"}) {
    routes.push_back({"GET", absl::StrCat("/ui/", file), false,
                      [this, file](const HttpRequest&) { return Page(file); }});
  }
  routes.push_back({"GET", "/ui/login", false, [this](const HttpRequest& request) {
                      return LoginPage(200, "", request.QueryParam("next"));
                    }});
  routes.push_back(
      {"POST", "/ui/login", true, [this](const HttpRequest& request) { return Login(request); }});
  routes.push_back({"GET", "/ui/logout", false, [](const HttpRequest&) {
                      HttpResponse response{200, "text/html; charset=utf-8",
                                            "<!doctype html><meta http-equiv=\"refresh\" "
                                            "content=\"0;url=/ui/login\">logged out"};
                      response.headers.push_back(
                          {"Set-Cookie", absl::StrCat(kCookieName,
                                                      "=; Path=/ui; HttpOnly; SameSite=Strict; "
                                                      "Max-Age=0")});
                      return response;
                    }});
  routes.push_back(
      {"GET", "/ui/api/jobs", false, [this](const HttpRequest& request) { return Jobs(request); }});
  routes.push_back({"POST", "/ui/api/cancel", false,
                    [this](const HttpRequest& request) { return Cancel(request); }});
  routes.push_back({"GET", "/ui/api/job", false,
                    [this](const HttpRequest& request) { return JobData(request); }});
  routes.push_back({"GET", "/ui/api/results.json", false,
                    [this](const HttpRequest& request) { return Download(request, false); }});
  routes.push_back({"GET", "/ui/api/results.csv", false,
                    [this](const HttpRequest& request) { return Download(request, true); }});
  routes.push_back({"GET", "/ui/api/samples", false,
                    [this](const HttpRequest& request) { return Samples(request); }});
  routes.push_back({"GET", "/ui/api/series", false,
                    [this](const HttpRequest& request) { return SeriesList(request); }});
  routes.push_back({"GET", "/ui/api/series_curves", false,
                    [this](const HttpRequest& request) { return SeriesCurves(request); }});
  return routes;
}

}  // namespace hgeval::server::web

// The results web UI of hgeval-server's HTTP door (--http_listen, issue 36): pages for
// jobs, results (lm-eval's table, a compare view, JSON/CSV downloads), NIAH heatmaps and
// per-sample records, and the JSON routes under /ui/api/ they read. Every route reads the
// JobService over the server's in-process channel, so its handlers, limits and auth are
// the gRPC ones; the pages (server/http/web/assets) are compiled into the binary.
//
// Auth, when the server has a token: a request to /ui... carries `Authorization: Bearer`
// or the HttpOnly cookie (the token in hex) that the login page (/ui/login, which takes
// the token) sets. Without
// either, a page answers 401 with the login form and a data route 401 JSON. Cancel (POST)
// also needs the header `X-Hgeval-UI: 1`, which no cross-site form can send.
#ifndef HGEVAL_SERVER_HTTP_WEB_WEB_UI_H_
#define HGEVAL_SERVER_HTTP_WEB_WEB_UI_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hgeval/v1/jobs.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "server/core/auth.h"
#include "server/http/http_listener.h"

namespace hgeval::server::web {

struct WebUiLimits {
  // A download (results JSON/CSV) or any other answer larger than this is refused (400).
  int64_t max_response_bytes = 64 << 20;
  // Jobs on the jobs page at most.
  int32_t max_listed_jobs = 200;
};

class WebUi {
 public:
  // `jobs` (a stub on the server's in-process channel) and `auth` must outlive it.
  WebUi(hgeval::v1::JobService::StubInterface* jobs, const BearerAuth* auth, WebUiLimits limits);

  // True for /ui and paths under /ui/.
  static bool IsUiPath(const std::string& path);
  // The routes to register on the HTTP listener.
  std::vector<HttpListener::Route> Routes();
  // The head check of a /ui path: nullopt to go on, else the refusal.
  std::optional<HttpResponse> CheckHead(const HttpRequest& head) const;

 private:
  // The request's Authorization header, else the login cookie as a bearer value.
  static std::string Authorization(const HttpRequest& request);
  bool Authenticated(const HttpRequest& request) const;
  HttpResponse Page(const std::string& name) const;
  HttpResponse LoginPage(int status, const std::string& message, const std::string& next) const;
  HttpResponse Login(const HttpRequest& request) const;
  HttpResponse Jobs(const HttpRequest& request) const;
  HttpResponse Cancel(const HttpRequest& request) const;
  HttpResponse JobData(const HttpRequest& request);
  HttpResponse Download(const HttpRequest& request, bool csv);
  HttpResponse Samples(const HttpRequest& request);
  HttpResponse SeriesList(const HttpRequest& request) const;
  HttpResponse SeriesCurves(const HttpRequest& request) const;

  absl::StatusOr<hgeval::v1::Job> GetJob(const std::string& id,
                                         const std::string& authorization) const;
  // The job's results JSON (and CSV), parsed; finished jobs' are kept for the next call.
  struct Results {
    hgeval::v1::Job job;  // without results_json / results_csv
    std::string json_text;
    std::string csv_text;
    nlohmann::json json;
  };
  absl::StatusOr<std::shared_ptr<const Results>> GetResults(const std::string& id,
                                                            const std::string& authorization);

  hgeval::v1::JobService::StubInterface* const jobs_;
  const BearerAuth* const auth_;
  const WebUiLimits limits_;
  std::mutex load_mutex_;  // held while one job's results are read and parsed
  std::mutex cache_mutex_;
  std::shared_ptr<const Results> cached_;  // the last finished job read; guarded
};

}  // namespace hgeval::server::web

#endif  // HGEVAL_SERVER_HTTP_WEB_WEB_UI_H_

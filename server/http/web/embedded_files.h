// The web UI's files (server/http/web/assets), compiled into hgeval-server by
// cmake/embed_files.cmake, so that the server needs no files beside itself.
#ifndef HGEVAL_SERVER_HTTP_WEB_EMBEDDED_FILES_H_
#define HGEVAL_SERVER_HTTP_WEB_EMBEDDED_FILES_H_

#include <string_view>

namespace hgeval::server::web {

struct EmbeddedFile {
  std::string_view name;  // relative to server/http/web/assets, e.g. "app.js"
  std::string_view content;
};
// Ends with an entry whose name is empty.
extern const EmbeddedFile kEmbeddedFiles[];

}  // namespace hgeval::server::web

#endif  // HGEVAL_SERVER_HTTP_WEB_EMBEDDED_FILES_H_

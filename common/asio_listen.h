// Listen: opens a Boost.Asio TCP acceptor on host:port (numeric port; 0 = a free one), the one
// way the HTTP servers (/metrics, the router's OpenAI API) bind their sockets.
#pragma once

#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace headroom {

// InvalidArgument when `host` does not resolve (naming `what`, e.g. "http"), Unavailable when the
// address cannot be bound or listened on.
inline absl::Status Listen(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host,
                           int port, const char* what) {
  using boost::asio::ip::tcp;
  boost::system::error_code ec;
  tcp::resolver resolver(acceptor.get_executor());
  const auto results = resolver.resolve(
      host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve ", what, " host ", host, ": ", ec.message()));
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  const std::string where = absl::StrCat(host, ":", port);
  if (acceptor.open(endpoint.protocol(), ec); ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", ec.message()));
  }
  acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (acceptor.bind(endpoint, ec); ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", ec.message()));
  }
  if (acceptor.listen(boost::asio::socket_base::max_listen_connections, ec); ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace headroom

// What the two HTTP servers (/metrics, the router's OpenAI API) share around Boost.Asio:
// Listen opens their TCP acceptor on host:port (numeric port; 0 = a free one), RunIoThread is the
// body of each of their io_context threads.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <exception>
#include <iostream>
#include <string>

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

// Runs `io` until it runs out of work or is stopped. Handlers take error codes and catch what
// user code throws; this only keeps a surprise (e.g. bad_alloc) from ending the process: it is
// logged as "<who>: <what>" and the thread goes on serving.
inline void RunIoThread(boost::asio::io_context& io, const char* who) {
  while (true) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      std::cerr << who << ": " << e.what() << "\n";
    }
  }
}

}  // namespace headroom

#include "launch/process_place.hpp"

#include <array>
#include <charconv>
#include <cerrno>
#include <cstring>
#include <memory>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace actorpipe::launch {

namespace {

/// One launcher's names for a process's rank, the number of processes and its rank on
/// its server.
struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* world;
  const char* local_rank;
};

constexpr std::array<LauncherVariables, 3> launchers{{
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
}};

Result<std::uint64_t> count(std::string_view text, std::string_view what, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value > max)
    return Error::bad_input(std::string(what) + ": '" + std::string(text) + "' is not a whole number from 0 to " +
                            std::to_string(max));
  return value;
}

} // namespace

std::string Endpoint::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> parse_endpoint(std::string_view text, std::string_view what, bool any_port) {
  const auto bad = [&](const std::string& why) {
    return Error::bad_input(std::string(what) + ": '" + std::string(text) + "' " + why + " (HOST:PORT)");
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("has no port");
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string_view::npos)
    return bad("needs its IPv6 host in brackets");
  if (host.empty()) return bad("has no host");
  auto port = count(text.substr(colon + 1), what, 65535);
  if (!port || (*port == 0 && !any_port)) return bad("has no port from 1 to 65535");
  return Endpoint{std::string(host), static_cast<std::uint16_t>(*port)};
}

Result<std::string> address_towards(const Endpoint& peer) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(peer.port);
  if (const int e = ::getaddrinfo(peer.host.c_str(), port.c_str(), &hints, &found); e != 0)
    return Error::run_failed(peer.text() + ": cannot resolve " + peer.host + ": " + ::gai_strerror(e));
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  const int fd = ::socket(found->ai_family, SOCK_DGRAM, 0);
  if (fd < 0) return Error::run_failed(peer.text() + ": no socket: " + std::strerror(errno));
  sockaddr_storage local{};
  socklen_t size = sizeof local;
  const bool routed = ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) == 0;
  const int error = errno;
  ::close(fd);
  if (!routed) return Error::run_failed(peer.text() + ": no route there: " + std::strerror(error));
  char text[INET6_ADDRSTRLEN] = {};
  const void* address = local.ss_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&local)->sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&local)->sin_addr);
  ::inet_ntop(local.ss_family, address, text, sizeof text);
  return std::string(text);
}

Result<std::optional<ProcessPlace>> place_from_environment(const std::function<const char*(const char*)>& get) {
  for (const LauncherVariables& names : launchers) {
    const char* rank = get(names.rank);
    if (rank == nullptr) continue;
    const char* world = get(names.world);
    if (world == nullptr)
      return Error::bad_input(std::string(names.rank) + " is set but " + names.world + " is not (" + names.launcher +
                              "'s variables)");
    ProcessPlace place;
    place.launcher = names.launcher;
    auto w = count(world, names.world, 1u << 20);
    ACTORPIPE_TRY(w);
    if (*w == 0) return Error::bad_input(std::string(names.world) + ": a run has at least one process");
    auto r = count(rank, names.rank, *w - 1);
    ACTORPIPE_TRY(r);
    place.rank = *r;
    place.world = *w;
    if (const char* local = get(names.local_rank)) {
      auto l = count(local, names.local_rank, *w - 1);
      ACTORPIPE_TRY(l);
      place.local_rank = *l;
    }
    const char* address = get("MASTER_ADDR");
    const char* port = get("MASTER_PORT");
    if ((address == nullptr) != (port == nullptr))
      return Error::bad_input(std::string(address ? "MASTER_ADDR" : "MASTER_PORT") + " is set but " +
                              (address ? "MASTER_PORT" : "MASTER_ADDR") + " is not");
    if (address != nullptr) {
      auto p = count(port, "MASTER_PORT", 65535);
      ACTORPIPE_TRY(p);
      if (*p == 0) return Error::bad_input("MASTER_PORT: 0 is not a port a worker can reach");
      if (*address == '\0') return Error::bad_input("MASTER_ADDR is empty");
      place.coordinator = Endpoint{address, static_cast<std::uint16_t>(*p)};
    }
    return std::optional<ProcessPlace>(std::move(place));
  }
  return std::optional<ProcessPlace>();
}

Result<int> listen_on(const Endpoint& at) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(at.port);
  if (const int e = ::getaddrinfo(at.host.c_str(), port.c_str(), &hints, &found); e != 0)
    return Error::bad_input(std::string("no such address: ") + ::gai_strerror(e));
  std::string why = "no address to listen on";
  int fd = -1;
  for (const addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return Error::bad_input(why);
  return fd;
}

} // namespace actorpipe::launch

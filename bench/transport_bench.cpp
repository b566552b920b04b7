/// Tensor transport benchmark: two processes on this machine (this one, rank 0, and a
/// child it forks, rank 1), two tables measured in one run:
///   point to point  a tensor of 1 KB … 64 MB from rank 0 to rank 1, through actorpipe's
///                   transport (transport/tensor_transport.hpp: c10d Gloo, a ticket per
///                   tensor), against the same bytes over a plain loopback TCP socket;
///                   each transfer timed to the receiver's 1-byte acknowledgement;
///   all-reduce      a stage's gradients (1 MB … 64 MB in 16 tensors) summed over both
///                   ranks through TensorTransport::all_reduce_sum, against c10d's
///                   ProcessGroupGloo allreduce called directly on one tensor of the
///                   same size; the 16 tensors either as a stage keeps its gradients
///                   when it sums them across processes (views of one flat buffer,
///                   train/gradient_buckets.hpp, which go as they are) or apart, as
///                   parameters and centres are (copied into one buffer and back).
/// Each row is the median of its repetitions, after one warm-up; a repetition times
/// both ways of a row one after the other. Both processes keep the memory they free,
/// as a run's processes do (train.retain_memory).
///   build/bench/transport_bench [--repeats N]   (N: 15)

#include "base/statistics.hpp"
#include "base/text_table.hpp"
#include "train/freed_memory.hpp"
#include "train/tensor_box.hpp"
#include "transport/tensor_transport.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace actorpipe;
using Clock = std::chrono::steady_clock;

namespace {

const std::vector<std::size_t> point_sizes{1u << 10, 16u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
const std::vector<std::size_t> reduce_sizes{1u << 20, 4u << 20, 16u << 20, 64u << 20};
constexpr std::size_t reduce_tensors = 16;

void must(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    must(w > 0, "write");
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

void read_all(int fd, char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    must(r > 0, "read");
    data += r;
    n -= static_cast<std::size_t>(r);
  }
}

/// The plain TCP baseline: a connected loopback socket pair between the two ranks
/// (rank 1 listens on `port`).
int tcp_socket(int rank, std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  must(fd >= 0, "socket");
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (rank == 1) {
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    must(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0, "bind");
    must(::listen(fd, 1) == 0, "listen");
    const int peer = ::accept(fd, nullptr, nullptr);
    must(peer >= 0, "accept");
    ::close(fd);
    ::setsockopt(peer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return peer;
  }
  for (int attempt = 0; ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0; ++attempt) {
    must(attempt < 2000, "connect");
    ::usleep(1000); // the child is still starting to listen
  }
  return fd;
}

struct Rows {
  std::vector<double> tcp_ms, transport_ms, bucketed_ms, apart_ms, gloo_ms; // by size
};

/// What both ranks run; rank 0 times and returns the medians.
Rows run(int rank, std::uint16_t store_port, std::uint16_t tcp_port, int repeats) {
  Rows rows;
  const int fd = tcp_socket(rank, tcp_port);
  transport::TransportOptions options;
  options.store = {"127.0.0.1", store_port};
  options.rank = static_cast<std::size_t>(rank);
  options.world = 2;
  auto opened = transport::TensorTransport::open(options);
  if (!opened) {
    std::cerr << opened.error().message << "\n";
    std::exit(1);
  }
  auto& link = **opened;
  if (auto joined = link.join(); !joined) {
    std::cerr << joined.error().message << "\n";
    std::exit(1);
  }
  // Each repetition times both ways one after the other, so that a busy moment of the
  // machine falls on both.
  std::vector<char> buffer(point_sizes.back());
  char ack = 0;
  std::uint32_t tag = 0; // each rank's tags to the other count up alike
  const auto one = train::wrap(torch::ones({1}));
  for (const std::size_t size : point_sizes) {
    const auto tensor = train::wrap(torch::ones({static_cast<std::int64_t>(size / 4)}));
    std::vector<double> tcp, ours;
    for (int i = 0; i <= repeats; ++i, ++tag) {
      auto start = Clock::now();
      if (rank == 0) {
        write_all(fd, buffer.data(), size);
        read_all(fd, &ack, 1);
      } else {
        read_all(fd, buffer.data(), size);
        write_all(fd, &ack, 1);
      }
      const double a = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      start = Clock::now();
      if (rank == 0) {
        link.send(tensor, 1);
        link.receive({1, tag, static_cast<std::int8_t>(torch::kFloat), {1}});
      } else {
        link.receive({0, tag, static_cast<std::int8_t>(torch::kFloat), {static_cast<std::int64_t>(size / 4)}});
        link.send(one, 0);
      }
      const double b = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (i > 0) {
        tcp.push_back(a);
        ours.push_back(b);
      }
    }
    rows.tcp_ms.push_back(median(tcp));
    rows.transport_ms.push_back(median(ours));
  }
  ::close(fd);

  auto both = link.group("bench", {0, 1});
  // c10d Gloo directly, on a store and process group of its own.
  c10d::TCPStoreOptions store;
  store.port = static_cast<std::uint16_t>(store_port + 1);
  store.isServer = rank == 0;
  store.numWorkers = 2;
  auto direct_store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store);
  auto gloo_options = c10d::ProcessGroupGloo::Options::create();
  gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  gloo_options->threads = 1;
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(direct_store, rank, 2, gloo_options);
  for (const std::size_t size : reduce_sizes) {
    const std::int64_t each = static_cast<std::int64_t>(size / 4 / reduce_tensors);
    const at::Tensor bucket = torch::ones({each * static_cast<std::int64_t>(reduce_tensors)});
    std::vector<train::Payload> bucketed, apart;
    for (std::size_t t = 0; t < reduce_tensors; ++t) {
      bucketed.push_back(train::wrap(bucket.narrow(0, static_cast<std::int64_t>(t) * each, each)));
      apart.push_back(train::wrap(torch::ones({each})));
    }
    std::vector<at::Tensor> flat{torch::ones({static_cast<std::int64_t>(size / 4)})};
    std::vector<double> in_bucket, in_parts, direct;
    const auto timed = [](auto&& what) {
      const auto start = Clock::now();
      what();
      return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    };
    for (int i = 0; i <= repeats; ++i) {
      const double a = timed([&] { link.all_reduce_sum(*both, bucketed); });
      const double b = timed([&] { link.all_reduce_sum(*both, apart); });
      const double c = timed([&] { gloo->allreduce(flat)->wait(); });
      if (i > 0) {
        in_bucket.push_back(a);
        in_parts.push_back(b);
        direct.push_back(c);
      }
    }
    rows.bucketed_ms.push_back(median(in_bucket));
    rows.apart_ms.push_back(median(in_parts));
    rows.gloo_ms.push_back(median(direct));
  }
  link.flush();
  return rows;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string size_text(std::size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MB" : std::to_string(bytes >> 10) + " KB";
}

} // namespace

int main(int argc, char** argv) {
  int repeats = 15;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--repeats") repeats = std::max(1, std::atoi(argv[i + 1]));
  // Ports from the process id: two benches at once do not collide.
  const auto base = static_cast<std::uint16_t>(20000 + (::getpid() % 20000));
  // Both processes keep the memory they free, as a run's do (train.retain_memory, on by
  // default): a received tensor's pages are then not faulted in afresh each time.
  train::retain_freed_memory();
  // Forked before LibTorch starts a thread.
  const pid_t child = ::fork();
  must(child >= 0, "fork");
  const int rank = child == 0 ? 1 : 0;
  const Rows rows = run(rank, base, static_cast<std::uint16_t>(base + 2), repeats);
  if (rank == 1) std::_Exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);

  std::cout << "point to point, rank 0 → rank 1 over loopback (median of " << repeats << ")\n";
  text::Table points({{"size"},
                      {"plain TCP ms", text::Table::Align::right},
                      {"MB/s", text::Table::Align::right},
                      {"actorpipe ms", text::Table::Align::right},
                      {"MB/s", text::Table::Align::right},
                      {"× plain TCP", text::Table::Align::right}});
  for (std::size_t i = 0; i < point_sizes.size(); ++i) {
    const double mb = static_cast<double>(point_sizes[i]) / 1e6;
    points.add_row({size_text(point_sizes[i]), fixed(rows.tcp_ms[i], 3), fixed(mb / rows.tcp_ms[i] * 1e3, 0),
                    fixed(rows.transport_ms[i], 3), fixed(mb / rows.transport_ms[i] * 1e3, 0),
                    fixed(rows.tcp_ms[i] / rows.transport_ms[i], 2)});
  }
  std::cout << points.str() << "\nall-reduce (sum) over 2 ranks, " << reduce_tensors
            << " tensors: bucketed (views of one buffer, a stage's gradients) and apart\n";
  text::Table reduces({{"size"},
                       {"c10d Gloo ms", text::Table::Align::right},
                       {"bucketed ms", text::Table::Align::right},
                       {"× c10d Gloo", text::Table::Align::right},
                       {"apart ms", text::Table::Align::right},
                       {"× c10d Gloo", text::Table::Align::right}});
  for (std::size_t i = 0; i < reduce_sizes.size(); ++i)
    reduces.add_row({size_text(reduce_sizes[i]), fixed(rows.gloo_ms[i], 3), fixed(rows.bucketed_ms[i], 3),
                     fixed(rows.gloo_ms[i] / rows.bucketed_ms[i], 2), fixed(rows.apart_ms[i], 3),
                     fixed(rows.gloo_ms[i] / rows.apart_ms[i], 2)});
  std::cout << reduces.str();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

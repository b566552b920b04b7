// Multi-process runs without processes: where a process stands as flags and launchers
// (torchrun, Slurm, Open MPI) say, the job's token file, the cores local workers are
// bound to, and the topology of a run's actors that the job and the stage hosts share.
#define BOOST_TEST_MODULE launch
#include <boost/test/unit_test.hpp>

#include "base/atomic_file.hpp"
#include "launch/core_list.hpp"
#include "launch/job_token.hpp"
#include "launch/placement.hpp"
#include "launch/process_place.hpp"
#include "launch/topology.hpp"
#include <actorpipe/job.hpp>
#include "test_support.hpp"

#include <map>
#include <sys/stat.h>

using namespace actorpipe;
using namespace actorpipe::launch;
using actorpipe::test::contains;

namespace {

/// An environment of the test's own, for place_from_environment().
struct Environment {
  std::map<std::string, std::string> variables;
  auto getter() const {
    return [this](const char* name) -> const char* {
      const auto it = variables.find(name);
      return it == variables.end() ? nullptr : it->second.c_str();
    };
  }
};

std::string error_of(const Result<std::optional<ProcessPlace>>& place) {
  BOOST_REQUIRE(!place.ok());
  return place.error().message;
}

} // namespace

BOOST_AUTO_TEST_CASE(endpoints_read_host_and_port_and_name_their_flag_when_wrong) {
  auto plain = parse_endpoint("10.0.0.7:29500", "--coordinator");
  REQUIRE_OK(plain);
  BOOST_TEST(plain->host == "10.0.0.7");
  BOOST_TEST(plain->port == 29500);
  BOOST_TEST(plain->text() == "10.0.0.7:29500");
  auto v6 = parse_endpoint("[::1]:7", "--coordinator");
  REQUIRE_OK(v6);
  BOOST_TEST(v6->host == "::1");
  BOOST_TEST(v6->text() == "[::1]:7");
  auto any = parse_endpoint("127.0.0.1:0", "--listen", true);
  REQUIRE_OK(any);
  BOOST_TEST(any->port == 0);
  for (const char* bad : {"host", "host:", ":80", "host:0", "host:65536", "host:8x", "::1:80"}) {
    auto e = parse_endpoint(bad, "--coordinator");
    BOOST_REQUIRE_MESSAGE(!e.ok(), bad);
    BOOST_TEST(contains(e.error().message, "--coordinator"));
    BOOST_TEST(contains(e.error().message, bad));
  }
}

BOOST_AUTO_TEST_CASE(a_worker_binds_where_its_packets_to_the_coordinator_leave_from) {
  auto loopback = launch::address_towards({"127.0.0.1", 29500});
  REQUIRE_OK(loopback);
  BOOST_TEST(*loopback == "127.0.0.1");
  auto six = launch::address_towards({"::1", 29500});
  if (six) BOOST_TEST(*six == "::1"); // where the machine has IPv6 at all
  auto nowhere = launch::address_towards({"no-such-host.invalid", 29500});
  BOOST_REQUIRE(!nowhere);
  BOOST_TEST(contains(nowhere.error().message, "no-such-host.invalid:29500: cannot resolve"), nowhere.error().message);
}

BOOST_AUTO_TEST_CASE(each_launchers_variables_give_rank_size_and_coordinator) {
  Environment none;
  auto nothing = place_from_environment(none.getter());
  REQUIRE_OK(nothing);
  BOOST_TEST(!nothing->has_value());

  Environment torchrun{
      {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}}};
  auto t = place_from_environment(torchrun.getter());
  REQUIRE_OK(t);
  BOOST_REQUIRE(t->has_value());
  BOOST_TEST((*t)->launcher == "torchrun");
  BOOST_TEST((*t)->rank == 3u);
  BOOST_TEST((*t)->world == 4u);
  BOOST_TEST((*t)->local_rank == 1u);
  BOOST_REQUIRE((*t)->coordinator.has_value());
  BOOST_TEST((*t)->coordinator->text() == "node0:29500");

  Environment slurm{{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}}};
  auto s = place_from_environment(slurm.getter());
  REQUIRE_OK(s);
  BOOST_TEST((*s)->launcher == "slurm");
  BOOST_TEST((*s)->rank == 5u);
  BOOST_TEST((*s)->world == 8u);
  BOOST_TEST((*s)->local_rank == 1u);
  BOOST_TEST(!(*s)->coordinator.has_value()); // --coordinator says where

  Environment mpi{{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"SLURM_NTASKS", "9"}}};
  auto m = place_from_environment(mpi.getter());
  REQUIRE_OK(m);
  BOOST_TEST((*m)->launcher == "openmpi");
  BOOST_TEST((*m)->world == 2u);

  // torchrun inside a Slurm allocation: torchrun's variables are the processes'.
  Environment both{{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}};
  auto b = place_from_environment(both.getter());
  REQUIRE_OK(b);
  BOOST_TEST((*b)->launcher == "torchrun");
  BOOST_TEST((*b)->rank == 1u);
}

BOOST_AUTO_TEST_CASE(a_launchers_variables_that_do_not_fit_are_named) {
  BOOST_TEST(contains(error_of(place_from_environment(Environment{{{"RANK", "0"}}}.getter())),
                      "RANK is set but WORLD_SIZE is not"));
  BOOST_TEST(contains(error_of(place_from_environment(Environment{{{"RANK", "4"}, {"WORLD_SIZE", "4"}}}.getter())),
                      "RANK: '4' is not a whole number from 0 to 3"));
  BOOST_TEST(
      contains(error_of(place_from_environment(Environment{{{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}}}.getter())),
               "SLURM_PROCID: 'x'"));
  BOOST_TEST(contains(error_of(place_from_environment(Environment{{{"RANK", "0"}, {"WORLD_SIZE", "0"}}}.getter())),
                      "WORLD_SIZE"));
  BOOST_TEST(contains(error_of(place_from_environment(
                          Environment{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"}}}.getter())),
                      "MASTER_ADDR is set but MASTER_PORT is not"));
  BOOST_TEST(contains(
      error_of(place_from_environment(
          Environment{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "0"}}}.getter())),
      "MASTER_PORT"));
}

BOOST_AUTO_TEST_CASE(tokens_are_fresh_and_their_file_is_its_owners_alone) {
  const std::string a = new_token();
  BOOST_TEST(a.size() == 64u);
  BOOST_TEST(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  BOOST_TEST(new_token() != a);

  test::ScratchDir dir;
  const std::string path = (dir.path() / "token").string();
  REQUIRE_OK(write_file_atomically(path, a + "\n", 0600)); // as a user makes one
  auto read = read_token_file(path);
  REQUIRE_OK(read);
  BOOST_TEST(*read == a);

  // Readable by others: refused, naming the file and the fix.
  ::chmod(path.c_str(), 0644);
  auto open = read_token_file(path);
  BOOST_REQUIRE(!open.ok());
  BOOST_TEST(contains(open.error().message, path));
  BOOST_TEST(contains(open.error().message, "chmod 600"));

  const std::string empty = dir.write("empty", "");
  ::chmod(empty.c_str(), 0600);
  BOOST_TEST(contains(read_token_file(empty).error().message, "empty"));
  BOOST_TEST(contains(read_token_file((dir.path() / "none").string()).error().message, "cannot read"));

  // The file first, else the variable; neither: how to give one.
  ::chmod(path.c_str(), 0600);
  const std::string given = "a-secret-from-the-environment-of-40-chars";
  BOOST_TEST(*worker_token(path, given.c_str()) == a);
  BOOST_TEST(*worker_token(std::nullopt, given.c_str()) == given);
  BOOST_TEST(contains(worker_token(std::nullopt, nullptr).error().message, token_variable));

  // A token too short to be a secret (one character was taken), from either place.
  const auto short_variable = worker_token(std::nullopt, "x");
  BOOST_REQUIRE(!short_variable.ok());
  BOOST_TEST(exit_status(short_variable.error().code) == 2);
  BOOST_TEST(contains(short_variable.error().message,
                      "ACTORPIPE_TOKEN: a token of 1 characters is too easy to guess; give at least 32"),
             short_variable.error().message);
  const std::string short_file = dir.write("short", "0123456789abcdef0123456789abcde\n"); // 31
  ::chmod(short_file.c_str(), 0600);
  BOOST_TEST(contains(read_token_file(short_file).error().message, short_file + ": a token of 31 characters"));
}

BOOST_AUTO_TEST_CASE(tokens_compare_whole) {
  BOOST_TEST(same_token("abc", "abc"));
  BOOST_TEST(!same_token("abd", "abc"));
  BOOST_TEST(!same_token("ab", "abc"));
  BOOST_TEST(!same_token("abcd", "abc"));
  BOOST_TEST(!same_token("", "abc"));
}

BOOST_AUTO_TEST_CASE(stages_go_to_processes_by_device_in_even_runs) {
  Plan plan;
  plan.pipelines = 2;
  plan.devices = {{0, 1}, {2, 3}}; // 2 pipelines × 2 stages on 4 devices
  auto two = place_stages(plan, 2, 1);
  REQUIRE_OK(two);
  BOOST_TEST((*two)[0] == (std::vector<std::size_t>{1, 1}), boost::test_tools::per_element());
  BOOST_TEST((*two)[1] == (std::vector<std::size_t>{2, 2}), boost::test_tools::per_element());
  auto four = place_stages(plan, 4, 1);
  REQUIRE_OK(four);
  BOOST_TEST((*four)[0] == (std::vector<std::size_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST((*four)[1] == (std::vector<std::size_t>{3, 4}), boost::test_tools::per_element());
  // Stages on one device share its process, whatever the pipeline.
  plan.devices = {{5, 1}, {5, 1}};
  auto shared = place_stages(plan, 2, 0);
  REQUIRE_OK(shared);
  BOOST_TEST((*shared)[0] == (std::vector<std::size_t>{1, 0}), boost::test_tools::per_element());
  BOOST_TEST((*shared)[1] == (std::vector<std::size_t>{1, 0}), boost::test_tools::per_element());
  auto too_many = place_stages(plan, 3, 0);
  BOOST_REQUIRE(!too_many.ok());
  BOOST_TEST(contains(too_many.error().message, "3 worker processes for a plan on 2 devices"));
}

BOOST_AUTO_TEST_CASE(the_cluster_file_names_the_machine_of_each_process) {
  test::ScratchDir dir;
  const std::string servers = "name = \"two\"\n[[servers]]\nname = \"a\"\nhost = \"alpha\"\n"
                              "devices = [{ kind = \"cpu\", count = 2, memory = \"1 GiB\" }]\n"
                              "[[servers]]\nname = \"b\"\ncount = 2\nhosts = [\"beta\", \"gamma\"]\n"
                              "devices = [{ kind = \"cpu\", count = 1, memory = \"1 GiB\" }]\n";
  auto cluster = load_cluster(dir.write("cluster.toml", servers));
  REQUIRE_OK(cluster);
  BOOST_REQUIRE_EQUAL(cluster->servers.size(), 3u);
  BOOST_TEST(cluster->servers[0].host == "alpha");
  BOOST_TEST(cluster->servers[2].host == "gamma");
  Plan plan;
  plan.pipelines = 2;
  plan.devices = {{0, 1}, {2, 3}}; // a's two devices, then b-0's and b-1's
  auto two = place_stages(plan, 2, 1);
  REQUIRE_OK(two);
  // Process 2 would run b-0's and b-1's devices: two machines.
  auto split = process_hosts(plan, *cluster, *two, 1);
  BOOST_REQUIRE(!split.ok());
  BOOST_TEST(contains(split.error().message, "worker process 2 would run devices of server 'b-0' (host beta) and of "
                                             "server 'b-1' (host gamma)"),
             split.error().message);
  auto three = place_stages(plan, 3, 1);
  REQUIRE_OK(three);
  auto hosts = process_hosts(plan, *cluster, *three, 1);
  REQUIRE_OK(hosts);
  BOOST_TEST(*hosts == (std::vector<std::string>{"alpha", "beta", "gamma"}), boost::test_tools::per_element());
  // A host per server: one for a single server, as many as the count for the others.
  for (const auto& [bad, message] :
       {std::pair{"host = \"alpha\"\ncount = 2", "names one machine for 2 servers (count): give hosts = [...]"},
        std::pair{"count = 2\nhosts = [\"x\"]", "1 host names for 2 servers (count)"}}) {
    const std::string file = "name = \"c\"\n[[servers]]\nname = \"a\"\n" + std::string(bad) +
                             "\ndevices = [{ kind = \"cpu\", count = 1, memory = \"1 GiB\" }]\n";
    auto refused = load_cluster(dir.write("bad.toml", file));
    BOOST_REQUIRE(!refused.ok());
    BOOST_TEST(contains(refused.error().message, message), refused.error().message);
    BOOST_TEST(contains(refused.error().message, "servers[0].host"), refused.error().message);
  }
}

BOOST_AUTO_TEST_CASE(core_lists_read_as_taskset_writes_them_and_are_written_back_alike) {
  const auto read = [](const std::string& text) {
    auto cores = parse_core_list(text, "--cpus");
    BOOST_REQUIRE_MESSAGE(cores.ok(), text);
    return *cores;
  };
  BOOST_TEST(read("0-3,8") == (std::vector<int>{0, 1, 2, 3, 8}), boost::test_tools::per_element());
  BOOST_TEST(read("5,1,1,2-3") == (std::vector<int>{1, 2, 3, 5}), boost::test_tools::per_element());
  BOOST_TEST(read("1023") == (std::vector<int>{1023}), boost::test_tools::per_element());
  for (const std::string text : {"0-3,8", "5", "0,2,4-6", "1-2,4-5,7"})
    BOOST_TEST(core_list_text(read(text)) == text);
  BOOST_TEST(core_list_text({1, 2, 3, 5}) == "1-3,5");
  for (const auto& [text, why] :
       std::vector<std::pair<std::string, std::string>>{{"", "'' is not a core"},
                                                        {"a", "'a' is not a core"},
                                                        {"1,", "'' is not a core"},
                                                        {"1-", "'1-' is not a core"},
                                                        {"-2", "'-2' is not a core"},
                                                        {" 1", "' 1' is not a core"},
                                                        {"1024", "each below 1024"},
                                                        {"4-2", "the range '4-2' runs backwards"}}) {
    const auto refused = parse_core_list(text, "--cpus");
    BOOST_REQUIRE_MESSAGE(!refused.ok(), text);
    BOOST_TEST((refused.error().code == ErrorCode::bad_input));
    BOOST_TEST(contains(refused.error().message, "--cpus '" + text + "': "), refused.error().message);
    BOOST_TEST(contains(refused.error().message, why), refused.error().message);
  }
}

BOOST_AUTO_TEST_CASE(even_shares_keep_workers_on_cores_of_their_own_and_share_only_when_they_outnumber_them) {
  const std::vector<int> eight{0, 1, 2, 3, 4, 5, 6, 7};
  BOOST_TEST(even_share(eight, 0, 3) == (std::vector<int>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(even_share(eight, 1, 3) == (std::vector<int>{2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(even_share(eight, 2, 3) == (std::vector<int>{5, 6, 7}), boost::test_tools::per_element());
  BOOST_TEST(even_share(eight, 0, 1) == eight, boost::test_tools::per_element());
  // Every core in exactly one share, shares within one core of each other in size.
  for (std::size_t shares = 1; shares <= 8; ++shares) {
    std::vector<int> all;
    std::size_t least = 8, most = 0;
    for (std::size_t k = 0; k < shares; ++k) {
      const std::vector<int> share = even_share(eight, k, shares);
      all.insert(all.end(), share.begin(), share.end());
      least = std::min(least, share.size());
      most = std::max(most, share.size());
    }
    BOOST_TEST(all == eight, boost::test_tools::per_element());
    BOOST_TEST(most - least <= 1u);
  }
  // A container's cores, fewer than the workers: one each, consecutive workers (a
  // pipeline's neighbouring stages) on one core.
  const std::vector<int> two{2, 5};
  for (std::size_t k = 0; k < 4; ++k)
    BOOST_TEST(even_share(two, k, 4) == (std::vector<int>{k < 2 ? 2 : 5}), boost::test_tools::per_element());
  BOOST_TEST(even_share(two, 2, 3) == (std::vector<int>{5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_topology_answers_what_each_process_spawns_and_where_its_neighbours_are) {
  // Three pipelines of three stages: pipeline 0 whole in rank 1, pipeline 1 split over
  // ranks 1 and 2, pipeline 2 whole in rank 2.
  const Topology t({{1, 1, 1}, {1, 2, 2}, {2, 2, 2}});
  BOOST_TEST(t.pipelines() == 3u);
  BOOST_TEST(t.stages() == 3u);
  BOOST_TEST(t.whole_in(1, 0));
  BOOST_TEST(!t.whole_in(1, 1));
  BOOST_TEST(!t.whole_in(2, 1));
  BOOST_TEST(t.whole_in(2, 2));
  // Rank 1's round (or averager, or server copy) of stage 0 holds pipelines 0 and 1;
  // of stage 1, pipeline 0 alone.
  BOOST_TEST(t.replicas_in(1, 0) == (std::vector<std::size_t>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(t.replicas_in(1, 1) == (std::vector<std::size_t>{0}), boost::test_tools::per_element());
  BOOST_TEST(t.replicas_in(2, 1) == (std::vector<std::size_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(t.replicas_in(0, 1).empty());
  BOOST_TEST(t.processes_of(1, {0, 1, 2}) == (std::vector<std::uint64_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(t.processes_of(1, {1, 2}) == (std::vector<std::uint64_t>{2}), boost::test_tools::per_element());
  BOOST_TEST(t.stages_in(1) == 4u);
  BOOST_TEST(t.stages_in(2) == 5u);
  BOOST_TEST(t.processes() == (std::vector<std::uint64_t>{1, 2}), boost::test_tools::per_element());
  // Pipeline 1's stage 1 gets its input from rank 1 and gives its output within rank 2.
  BOOST_TEST(t.previous_rank(1, 1).value() == 1u);
  BOOST_TEST(t.next_rank(1, 1).value() == 2u);
  BOOST_TEST(!t.previous_rank(1, 0));
  BOOST_TEST(!t.next_rank(1, 2));
  // One process: everything is rank 0's.
  const Topology one = Topology::one_process(2, 3);
  BOOST_TEST(one.whole_in(0, 1));
  BOOST_TEST(one.replicas_in(0, 2) == (std::vector<std::size_t>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(one.processes() == (std::vector<std::uint64_t>{0}), boost::test_tools::per_element());
}

// The plugin loader: the shipped plugins are found and work; every broken module is
// refused with one message naming its file.
#define BOOST_TEST_MODULE plugins
#include <boost/test/unit_test.hpp>

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include "test_support.hpp"
#include "base/scope_exit.hpp"

#include <clocale>
#include <unistd.h>

using namespace actorpipe;
using test::contains;

namespace {

std::string broken(const std::string& name) { return (test::broken_plugins() / (name + ".so")).string(); }

Error discover_error(const std::string& module) {
  std::vector<std::string> folders = PluginRegistry::default_folders();
  folders.push_back(module);
  auto registry = PluginRegistry::discover(folders);
  BOOST_REQUIRE_MESSAGE(!registry.ok(), module + " should have been refused");
  BOOST_TEST(exit_status(registry.error().code) == 2);
  BOOST_TEST(contains(registry.error().message, module + ": "), registry.error().message);
  return registry.error();
}

JobSpec vgg16_job(const std::vector<std::string>& overrides = {}) {
  auto job = load_job((test::source_root() / "configs/vgg16-4dev.toml").string(), overrides);
  REQUIRE_OK(job);
  return *job;
}

} // namespace

BOOST_AUTO_TEST_CASE(shipped_plugins_are_found_with_their_info) {
  auto registry = PluginRegistry::discover(PluginRegistry::default_folders());
  REQUIRE_OK(registry);
  const PluginRecord* uniform = registry->find(PluginKind::partitioner, "uniform");
  const PluginRecord* parameters = registry->find(PluginKind::partitioner, "parameters");
  const PluginRecord* sequential = registry->find(PluginKind::mapper, "sequential");
  BOOST_REQUIRE(uniform);
  BOOST_REQUIRE(parameters);
  BOOST_REQUIRE(sequential);
  BOOST_TEST(uniform->version == "1.0.0");
  BOOST_TEST(contains(uniform->file, "partitioner_uniform.so"));
  BOOST_TEST(!sequential->description.empty());
  BOOST_TEST(registry->plugins().size() == 22u);
}

BOOST_AUTO_TEST_CASE(a_plugin_number_option_reads_numbers_as_the_job_file_wrote_them) {
  // std::stod follows the C locale: under one whose decimal point is a comma, "0.5"
  // read as 0. The option reads '.' as the TOML file wrote it, in any locale (checked
  // under a comma locale where this machine has one).
  for (const char* locale : {"de_DE.UTF-8", "fr_FR.UTF-8"})
    if (std::setlocale(LC_NUMERIC, locale)) break;
  const ScopeExit restore([] { std::setlocale(LC_NUMERIC, "C"); });
  const PluginOptions options{{"half", "0.5"}, {"thousand", "1e3"}, {"comma", "0,5"}, {"word", "half"}, {"none", ""}};
  BOOST_TEST(number_option(options, "half", 9, 0, 10).value() == 0.5);
  BOOST_TEST(number_option(options, "thousand", 9, 0, 1e4).value() == 1000.0);
  BOOST_TEST(number_option(options, "absent", 9, 0, 10).value() == 9.0);
  for (const char* bad : {"comma", "word", "none"}) {
    const auto read = number_option(options, bad, 9, 0, 10);
    BOOST_REQUIRE(!read.ok());
    BOOST_TEST(read.error().message == "option '" + std::string(bad) + "': '" + options.at(bad) + "' is not a number");
  }
  const auto far = number_option(options, "thousand", 9, 0, 10);
  BOOST_REQUIRE(!far.ok());
  BOOST_TEST(far.error().message == "option 'thousand': 1e3 is outside [0, 10]");
}

BOOST_AUTO_TEST_CASE(wrong_abi_is_refused_before_the_factory_runs) {
  const Error e = discover_error(broken("wrong_abi"));
  BOOST_TEST(contains(e.message, "plugin ABI version " + std::to_string(plugin_abi_version + 41)), e.message);
}

BOOST_AUTO_TEST_CASE(a_library_that_is_not_a_plugin_is_refused) {
  const Error e = discover_error(broken("not_a_plugin"));
  BOOST_TEST(contains(e.message, "not an actorpipe plugin"), e.message);
}

BOOST_AUTO_TEST_CASE(a_plugin_whose_factory_makes_another_kind_is_refused_when_made) {
  // Its info says partitioner, its factory makes a mapper: called as a partitioner, the
  // mapper's table ran (type confusion).
  auto registry = PluginRegistry::discover({broken("wrong_kind")});
  REQUIRE_OK(registry);
  auto partitioner = registry->partitioner("wrong-kind");
  BOOST_REQUIRE(!partitioner.ok());
  BOOST_TEST(contains(partitioner.error().message,
                      "wrong_kind.so: plugin 'wrong-kind' says it is a partitioner but its factory made another "
                      "kind of object"),
             partitioner.error().message);
}

BOOST_AUTO_TEST_CASE(a_plugin_path_that_is_no_folder_or_file_is_named) {
  const Error e = discover_error("/dev/null");
  BOOST_TEST(contains(e.message, "/dev/null: neither a plugin folder nor a plugin file"), e.message);
}

BOOST_AUTO_TEST_CASE(a_plugin_without_factory_is_refused) {
  const Error e = discover_error(broken("no_factory"));
  BOOST_TEST(contains(e.message, "plugin 'no-factory' has no factory"), e.message);
}

BOOST_AUTO_TEST_CASE(two_plugins_with_one_name_are_refused) {
  const Error e = discover_error(broken("duplicate_uniform"));
  BOOST_TEST(contains(e.message, "a partitioner named 'uniform' is already loaded from"), e.message);
  BOOST_TEST(contains(e.message, "partitioner_uniform.so"), e.message);
}

BOOST_AUTO_TEST_CASE(the_search_path_loads_what_it_names_and_nothing_a_stranger_may_write) {
  test::ScratchDir dir;
  namespace fs = std::filesystem;
  // A relative entry is relative to the current folder, not the dynamic loader's path
  // (on which the tests' own failing.so lies): here it names a module of another ABI.
  fs::copy_file(broken("wrong_abi"), dir.path() / "failing.so");
  const fs::path here = fs::current_path();
  fs::current_path(dir.path());
  auto relative = PluginRegistry::discover({"failing.so"});
  fs::current_path(here);
  BOOST_REQUIRE(!relative.ok());
  BOOST_TEST(contains(relative.error().message, (dir.path() / "failing.so").string() + ": plugin ABI version"),
             relative.error().message);

  // A folder's subfolders are not searched.
  fs::create_directories(dir.path() / "folder" / "deeper");
  fs::copy_file(broken("failing"), dir.path() / "folder" / "deeper" / "failing.so");
  auto folder = PluginRegistry::discover({(dir.path() / "folder").string()});
  REQUIRE_OK(folder);
  BOOST_TEST(folder->plugins().empty());

  // A module any user may write is refused.
  const fs::path open_to_all = dir.path() / "folder" / "failing.so";
  fs::copy_file(broken("failing"), open_to_all);
  fs::permissions(open_to_all, fs::perms::others_write, fs::perm_options::add);
  auto writable = PluginRegistry::discover({open_to_all.string()});
  BOOST_REQUIRE(!writable.ok());
  BOOST_TEST(contains(writable.error().message, "refusing to load a plugin that any user may write"),
             writable.error().message);

  // So is one in a folder where any user may replace it (no sticky bit).
  const fs::path shared = dir.path() / "shared";
  fs::create_directories(shared);
  fs::copy_file(broken("failing"), shared / "failing.so");
  fs::permissions(shared, fs::perms::others_all, fs::perm_options::add);
  auto replaceable = PluginRegistry::discover({shared.string()});
  BOOST_REQUIRE(!replaceable.ok());
  BOOST_TEST(contains(replaceable.error().message, "where any user may replace it"), replaceable.error().message);
  // With the sticky bit (as /tmp has), only the owner may replace it.
  fs::permissions(shared, fs::perms::sticky_bit, fs::perm_options::add);
  REQUIRE_OK(PluginRegistry::discover({shared.string()}));

  // Every folder up to the root counts: a safe folder inside one where any user may
  // rename it is no safer than that one.
  const fs::path outer = dir.path() / "outer", inner = outer / "inner";
  fs::create_directories(inner);
  fs::copy_file(broken("failing"), inner / "failing.so");
  fs::permissions(outer, fs::perms::all, fs::perm_options::replace);
  fs::permissions(inner,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                      fs::perms::others_exec,
                  fs::perm_options::replace);
  auto nested = PluginRegistry::discover({inner.string()});
  BOOST_REQUIRE(!nested.ok());
  BOOST_TEST(contains(nested.error().message, "from under " + outer.string() + ", where any user may replace it"),
             nested.error().message);
  // A link in a safe folder is followed to where it leads, and that is checked.
  const fs::path safe = dir.path() / "safe";
  fs::create_directories(safe);
  fs::create_symlink(inner / "failing.so", safe / "failing.so");
  auto linked = PluginRegistry::discover({safe.string()});
  BOOST_REQUIRE(!linked.ok());
  BOOST_TEST(contains(linked.error().message, (safe / "failing.so").string() + " (" + (inner / "failing.so").string() +
                                                  "): refusing to load a plugin from under " + outer.string()),
             linked.error().message);
  fs::permissions(outer, fs::perms::others_write | fs::perms::group_write, fs::perm_options::remove);
  // A module its group may write is refused too.
  fs::permissions(inner / "failing.so", fs::perms::group_write, fs::perm_options::add);
  auto group = PluginRegistry::discover({inner.string()});
  BOOST_REQUIRE(!group.ok());
  BOOST_TEST(contains(group.error().message, "that its group may write (chmod g-w)"), group.error().message);
  fs::permissions(inner / "failing.so", fs::perms::group_write, fs::perm_options::remove);
  // And one another user owns (only root can make one here).
  if (::geteuid() == 0) {
    BOOST_REQUIRE(::chown((inner / "failing.so").c_str(), 65534, 65534) == 0);
    auto theirs = PluginRegistry::discover({inner.string()});
    BOOST_REQUIRE(!theirs.ok());
    BOOST_TEST(contains(theirs.error().message, "refusing to load a plugin owned by another user (uid 65534)"),
               theirs.error().message);
  }
}

BOOST_AUTO_TEST_CASE(a_missing_plugin_folder_is_named) {
  auto registry = PluginRegistry::discover({(test::broken_plugins() / "no-such-folder").string()});
  BOOST_REQUIRE(!registry.ok());
  BOOST_TEST(contains(registry.error().message, "no-such-folder: plugin folder not found"));
}

BOOST_AUTO_TEST_CASE(a_plugin_error_names_the_plugin_and_its_file) {
  std::vector<std::string> folders = PluginRegistry::default_folders();
  folders.push_back(broken("failing"));
  auto registry = PluginRegistry::discover(folders);
  BOOST_REQUIRE(registry.ok());
  auto plan = make_plan(vgg16_job({"plan.partitioner=\"refuses\""}), *registry);
  BOOST_REQUIRE(!plan.ok());
  BOOST_TEST(contains(plan.error().message, "partitioner 'refuses' (" + broken("failing") + "): refuses every model"),
             plan.error().message);
  BOOST_TEST(exit_status(plan.error().code) == 2);
}

BOOST_AUTO_TEST_CASE(a_scheduler_whose_chunks_are_wrong_is_named) {
  // Chunks said and chunks scheduled must agree, and a V has two.
  for (const auto& [module, name, expected] :
       {std::tuple<const char*, const char*, const char*>{
            "wrong_chunks", "says-two-chunks", "returned a schedule of 1 chunks (loop) after saying 2 (loop)"},
        {"three_chunk_v", "three-chunk-v", "said it puts 3 chunks in a v (a V has 2; a loop at least 1)"}})
    BOOST_TEST_CONTEXT(name) {
      std::vector<std::string> folders = PluginRegistry::default_folders();
      folders.push_back(broken(module));
      auto registry = PluginRegistry::discover(folders);
      BOOST_REQUIRE(registry.ok());
      auto plan = make_plan(vgg16_job({std::string("plan.scheduler=\"") + name + "\""}), *registry);
      BOOST_REQUIRE(!plan.ok());
      BOOST_TEST(contains(plan.error().message, std::string("scheduler '") + name + "' (" + broken(module) + "): "),
                 plan.error().message);
      BOOST_TEST(contains(plan.error().message, expected), plan.error().message);
      BOOST_TEST(exit_status(plan.error().code) == 2);
    }
}

BOOST_AUTO_TEST_CASE(a_throwing_plugin_returns_an_error_instead) {
  std::vector<std::string> folders = PluginRegistry::default_folders();
  folders.push_back(broken("throwing"));
  auto registry = PluginRegistry::discover(folders);
  BOOST_REQUIRE(registry.ok());
  auto plan = make_plan(vgg16_job({"plan.mapper=throws"}), *registry);
  BOOST_REQUIRE(!plan.ok());
  BOOST_TEST(contains(plan.error().message, "mapper 'throws'"), plan.error().message);
  BOOST_TEST(contains(plan.error().message, "map threw: mapper exploded"), plan.error().message);
  BOOST_TEST(exit_status(plan.error().code) == 2);
}

BOOST_AUTO_TEST_CASE(an_unknown_plugin_name_points_at_the_key) {
  auto registry = PluginRegistry::discover(PluginRegistry::default_folders());
  BOOST_REQUIRE(registry.ok());
  auto plan = make_plan(vgg16_job({"plan.partitioner=paramters"}), *registry);
  BOOST_REQUIRE(!plan.ok());
  BOOST_TEST(contains(plan.error().message,
                      "plan.partitioner: no partitioner named 'paramters', did you mean 'parameters'? "
                      "(found: autopipe, dapple, parameters, pipedream, piper, uniform)"),
             plan.error().message);
}

BOOST_AUTO_TEST_CASE(unknown_plugin_options_are_refused_by_the_plugin) {
  auto registry = PluginRegistry::discover(PluginRegistry::default_folders());
  BOOST_REQUIRE(registry.ok());
  auto plan = make_plan(vgg16_job({"plan.options.uniform.depth=3"}), *registry);
  BOOST_REQUIRE(!plan.ok());
  BOOST_TEST(contains(plan.error().message, "partitioner 'uniform'"), plan.error().message);
  BOOST_TEST(contains(plan.error().message, "unknown option 'depth'"), plan.error().message);
  // Placed where the option was set.
  BOOST_TEST(plan.error().message.starts_with("--set plan.options.uniform.depth=3: plan.options.uniform.depth: "),
             plan.error().message);
}

namespace {

/// A partitioner of a host program's own, which throws on a shape it cannot cut.
class Halves : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    if (context.stages != 2) throw std::invalid_argument("halves cuts in two only");
    const std::size_t n = context.profile.blocks.size();
    return Partition{{{0, 0}, {n / 2, 0}, {n, 0}}};
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_host_adds_a_class_of_its_own_guarded_as_a_module_is) {
  auto registry = PluginRegistry::discover(PluginRegistry::default_folders());
  REQUIRE_OK(registry);
  REQUIRE_OK(registry->add_class<Halves>("halves", "1.0.0", "two stages of equal block counts"));
  const PluginRecord* record = registry->find(PluginKind::partitioner, "halves");
  BOOST_REQUIRE(record);
  BOOST_TEST(record->file == "(added by this program)");
  auto plan = make_plan(vgg16_job({"plan.partitioner=\"halves\"", "plan.stages=2"}), *registry);
  REQUIRE_OK(plan);
  BOOST_TEST(plan->stages[1].begin.block == vgg16_job().profile.blocks.size() / 2);
  // The exception comes back as an error naming the call, not through the planner.
  auto refused = make_plan(vgg16_job({"plan.partitioner=\"halves\"", "plan.stages=4"}), *registry);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(contains(refused.error().message, "partition threw: halves cuts in two only"), refused.error().message);
  // A name is a kind's once.
  auto twice = registry->add_class<Halves>("halves", "2.0.0", "again");
  BOOST_REQUIRE(!twice);
  BOOST_TEST(contains(twice.error().message, "a partitioner named 'halves' is already loaded"));
  BOOST_TEST(!registry->add_class<Halves>("uniform", "1", "shadowing a shipped one").ok());
}

BOOST_AUTO_TEST_CASE(chunked_schedulers_say_their_chunks_before_they_schedule) {
  // The planner asks a scheduler's chunking before it cuts the model: interleaved-1f1b
  // takes `chunks` (2 by default), zbv is always a V of two.
  auto interleaved = test::plugins().scheduler("interleaved-1f1b");
  auto zbv = test::plugins().scheduler("zbv");
  auto ofob = test::plugins().scheduler("1f1b");
  REQUIRE_OK(interleaved);
  REQUIRE_OK(zbv);
  REQUIRE_OK(ofob);
  auto two = (*interleaved)->chunking({});
  auto three = (*interleaved)->chunking({{"chunks", "3"}});
  auto v = (*zbv)->chunking({});
  auto none = (*ofob)->chunking({});
  REQUIRE_OK(two);
  REQUIRE_OK(three);
  REQUIRE_OK(v);
  REQUIRE_OK(none);
  BOOST_TEST(two->chunks == 2u);
  BOOST_TEST(three->chunks == 3u);
  BOOST_TEST((v->chunks == 2u && v->shape == ChunkShape::v));
  BOOST_TEST(none->chunks == 1u);
  auto one = (*interleaved)->chunking({{"chunks", "1"}});
  BOOST_REQUIRE(!one.ok());
  BOOST_TEST(contains(one.error().message, "option 'chunks': 1 is outside [2, 8]"), one.error().message);
  // Asked with the chunking and per virtual stage times, each schedules its chunks.
  ScheduleRequest request;
  request.stages = 4;
  request.micro_batch_sizes.assign(8, 2);
  request.chunking = *three;
  request.options = {{"chunks", "3"}};
  auto looped = (*interleaved)->schedule(request);
  REQUIRE_OK(looped);
  BOOST_TEST(looped->virtual_stages() == 12u);
  REQUIRE_OK(validate(*looped));
  request.chunking = *v;
  request.options = {};
  request.stage_forward_ms.assign(8, 0.5);
  request.stage_backward_ms.assign(8, 1.0);
  auto shaped = (*zbv)->schedule(request);
  REQUIRE_OK(shaped);
  BOOST_TEST((shaped->shape == ChunkShape::v));
  REQUIRE_OK(validate(*shaped));
}

BOOST_AUTO_TEST_CASE(afp_runs_forwards_ahead_only_as_far_as_the_pipeline_gains) {
  auto afp = test::plugins().scheduler("afp");
  REQUIRE_OK(afp);
  ScheduleRequest request;
  request.stages = 4;
  request.micro_batch_sizes.assign(8, 4);
  request.stage_forward_ms = {1, 1, 1, 1};
  request.stage_backward_ms = {2, 2, 2, 2};
  const auto makespan = [&](const Schedule& s) {
    return simulate_pipeline(s, request.stage_forward_ms, request.stage_backward_ms, request.send_ms).makespan_ms;
  };
  // Free sends: running ahead gains nothing, and afp holds what 1F1B holds.
  request.send_ms = {0, 0, 0};
  auto quiet = (*afp)->schedule(request);
  REQUIRE_OK(quiet);
  BOOST_TEST((quiet->stages == one_f_one_b_schedule(4, request.micro_batch_sizes).stages));
  // Slow sends leave 1F1B's stages waiting for gradients: afp fills the waits with
  // forwards, faster than 1F1B, holding fewer activations than GPipe (2 micro-batches
  // more than 1F1B by default).
  request.send_ms = {0.5, 0.5, 0.5};
  auto slow = (*afp)->schedule(request);
  REQUIRE_OK(slow);
  const Schedule ofob = one_f_one_b_schedule(4, request.micro_batch_sizes);
  const Schedule gpipe = gpipe_schedule(4, request.micro_batch_sizes);
  BOOST_TEST_MESSAGE("1f1b " << makespan(ofob) << " ms, afp " << makespan(*slow) << " ms, gpipe " << makespan(gpipe)
                             << " ms");
  BOOST_TEST(makespan(*slow) < makespan(ofob));
  BOOST_TEST(peak_stashed_samples(*slow)[0] == peak_stashed_samples(ofob)[0] + 2 * 4);
  BOOST_TEST(peak_stashed_samples(*slow)[0] < peak_stashed_samples(gpipe)[0]);
  // Allowed all the way, it goes as far as time gains: here, to GPipe's makespan.
  request.options = {{"max_ahead", "8"}};
  auto unbounded = (*afp)->schedule(request);
  REQUIRE_OK(unbounded);
  BOOST_TEST(makespan(*unbounded) == makespan(gpipe));
  // A fixed ahead is taken as given.
  request.options = {{"ahead", "2"}};
  auto fixed = (*afp)->schedule(request);
  REQUIRE_OK(fixed);
  BOOST_TEST((fixed->stages == advance_forward_schedule(4, request.micro_batch_sizes, 2).stages));
}

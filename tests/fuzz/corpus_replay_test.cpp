#define BOOST_TEST_MODULE fuzz_corpus
#include <boost/test/unit_test.hpp>

#include "fuzz_targets.hpp"
#include "test_support.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

using namespace actorpipe;

/// Every input the fuzzers kept (tests/fuzz/corpus/TARGET/) goes through its parser
/// again: what once crashed or broke an invariant stays fixed.
BOOST_AUTO_TEST_CASE(every_kept_input_parses_or_is_refused_without_a_crash) {
  for (const fuzz::NamedTarget& target : fuzz::targets) {
    const auto folder = test::source_root() / "tests" / "fuzz" / "corpus" / std::string(target.name);
    BOOST_TEST_CONTEXT(target.name) {
      BOOST_REQUIRE_MESSAGE(std::filesystem::is_directory(folder), folder.string() + " is missing");
      std::size_t inputs = 0;
      for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        std::ifstream in(entry.path(), std::ios::binary);
        const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        target.run(bytes.data(), bytes.size());
        ++inputs;
      }
      BOOST_TEST(inputs > 0u);
    }
  }
}

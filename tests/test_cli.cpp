// The shared command line: every class of bad input is refused with one line naming the flag, good
// input lands in Options, and random argument lists never crash the parser.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/cli.h"
#include "common/tensor.h"

using namespace conv1d;

namespace {

ChapterSpec chapter01() {
  ChapterSpec s;
  s.number = "01";
  s.name = "host_img2col";
  s.title = "test";
  s.dtypes = {Dtype::fp32, Dtype::fp16};
  return s;
}

ParseResult parse(std::vector<std::string> args, Options* opt,
                  const ChapterSpec& spec = chapter01(), const std::vector<ExtraFlag>& extra = {}) {
  std::vector<const char*> argv{"ch01"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data(), spec, opt, extra);
}

void expect_error(std::vector<std::string> args, const std::string& fragment) {
  Options opt;
  const ParseResult r = parse(args, &opt);
  std::string joined;
  for (const std::string& a : args) joined += a + " ";
  EXPECT_EQ(r.status, ParseStatus::error) << joined;
  EXPECT_NE(r.message.find(fragment), std::string::npos) << joined << " -> " << r.message;
  EXPECT_EQ(r.message.find('\n'), std::string::npos) << "one line: " << r.message;
}

}  // namespace

TEST(Cli, DefaultsAndGoodValues) {
  Options opt;
  ASSERT_EQ(parse({}, &opt).status, ParseStatus::ok);
  EXPECT_EQ(opt.batch, chapter01().defaults.batch);
  ASSERT_EQ(parse({"--batch", "3", "--dim=17", "--seqlen", "+9", "--width", "2", "--dtype", "fp16",
                   "--iters", "5", "--warmup", "0", "--seed", "18446744073709551615", "--save-npy",
                   "d", "--profile-csv", "p/q"},
                  &opt)
                .status,
            ParseStatus::ok);
  EXPECT_EQ(opt.batch, 3);
  EXPECT_EQ(opt.dim, 17);
  EXPECT_EQ(opt.seqlen, 9);
  EXPECT_EQ(opt.width, 2);
  EXPECT_EQ(opt.dtype, Dtype::fp16);
  EXPECT_EQ(opt.iters, 5);
  EXPECT_EQ(opt.warmup, 0);
  EXPECT_EQ(opt.seed, 18446744073709551615ull);
  EXPECT_EQ(opt.save_npy, "d");
  EXPECT_EQ(opt.profile_csv, "p/q");
}

TEST(Cli, BadNumbers) {
  expect_error({"--batch", "0"}, "--batch must be an integer in [1, 65535] (got '0')");
  expect_error({"--batch", "-1"}, "--batch must be an integer");
  expect_error({"--batch", "65536"}, "--batch must be an integer in [1, 65535]");
  expect_error({"--dim", "abc"}, "--dim must be an integer");
  expect_error({"--dim", "12x"}, "--dim must be an integer");
  expect_error({"--dim", ""}, "--dim must be an integer");
  expect_error({"--seqlen", "1.5"}, "--seqlen must be an integer");
  expect_error({"--seqlen", "99999999999999999999999"}, "--seqlen must be an integer");
  expect_error({"--iters", "0"}, "--iters must be an integer in [1, 100000]");
  expect_error({"--warmup", "-3"}, "--warmup must be an integer in [0, 10000]");
  expect_error({"--seed", "-5"}, "--seed must be an integer");
  expect_error({"--seed", "18446744073709551616"}, "--seed must be an integer");
}

TEST(Cli, WidthAndDtype) {
  expect_error({"--width", "1"}, "--width must be 2, 3 or 4 (got '1')");
  expect_error({"--width", "5"}, "--width must be 2, 3 or 4");
  expect_error({"--dtype", "int8"}, "--dtype must be one of fp32, fp16, bf16 (got 'int8')");
  expect_error({"--dtype", "bf16"},
               "--dtype bf16 arrives in chapter 06 (this is chapter 01; here: fp32, fp16)");
}

TEST(Cli, FeaturesNotYetArrived) {
  expect_error({"--bias"}, "--bias arrives in chapter 04 (this is chapter 01)");
  expect_error({"--silu"}, "--silu arrives in chapter 04");
  ChapterSpec later = chapter01();
  later.number = "04";
  later.bias = later.silu = true;
  Options opt;
  ASSERT_EQ(parse({"--bias", "--silu"}, &opt, later).status, ParseStatus::ok);
  EXPECT_TRUE(opt.bias && opt.silu);
}

TEST(Cli, MalformedFlags) {
  expect_error({"--bacth", "3"}, "unknown flag '--bacth'");
  expect_error({"-b", "3"}, "unexpected argument '-b'");
  expect_error({"extra"}, "unexpected argument 'extra'");
  expect_error({"--batch"}, "--batch needs a value");
  expect_error({"--bias=1"}, "--bias is a switch and takes no value");
  expect_error({"--save-npy", ""}, "--save-npy needs a non-empty path");
  expect_error({"--profile-csv="}, "--profile-csv needs a non-empty path");
}

TEST(Cli, SizeProductOverflowAndLimit) {
  expect_error({"--batch", "65535", "--dim", "1048576", "--seqlen", "1073741824"},
               "exceeds the limit");
  expect_error({"--batch", "1024", "--dim", "1024", "--seqlen", "1048576"}, "exceeds the limit");
  Options opt;
  EXPECT_EQ(parse({"--batch", "1", "--dim", "1048576", "--seqlen", "65536"}, &opt).status,
            ParseStatus::ok);
}

TEST(Cli, HelpWinsAndListsEverything) {
  Options opt;
  const ParseResult r = parse({"--batch", "0", "--help"}, &opt);
  EXPECT_EQ(r.status, ParseStatus::help);
  for (const char* f : {"--batch", "--dim", "--seqlen", "--width", "--dtype", "--bias", "--silu",
                        "--iters", "--warmup", "--seed", "--save-npy", "--profile-csv", "--help",
                        "arrives in chapter 04", "fp32, fp16"})
    EXPECT_NE(r.message.find(f), std::string::npos) << f;
}

TEST(Cli, ChapterFlags) {
  int64_t streams = 1;
  std::string epilogue = "fused";
  bool graph = false;
  const std::vector<ExtraFlag> extra{
      int_flag("--streams", &streams, 1, 16, "streams"),
      choice_flag("--epilogue", &epilogue, {"separate", "fused", "both"}, "how"),
      switch_flag("--graph", &graph, "graph")};
  Options opt;
  ASSERT_EQ(
      parse({"--streams", "4", "--epilogue=separate", "--graph"}, &opt, chapter01(), extra).status,
      ParseStatus::ok);
  EXPECT_EQ(streams, 4);
  EXPECT_EQ(epilogue, "separate");
  EXPECT_TRUE(graph);
  ParseResult r = parse({"--streams", "17"}, &opt, chapter01(), extra);
  EXPECT_EQ(r.message, "--streams must be an integer in [1, 16] (got '17')");
  r = parse({"--epilogue", "late"}, &opt, chapter01(), extra);
  EXPECT_EQ(r.message, "--epilogue must be one of separate, fused, both (got 'late')");
  EXPECT_NE(help_text(chapter01(), extra).find("--epilogue"), std::string::npos);
}

TEST(Cli, CheckedArithmetic) {
  int64_t r = 0;
  EXPECT_TRUE(checked_mul(int64_t(1) << 31, int64_t(1) << 31, &r));
  EXPECT_EQ(r, int64_t(1) << 62);
  EXPECT_FALSE(checked_mul(int64_t(1) << 32, int64_t(1) << 31, &r));
  EXPECT_FALSE(checked_add(INT64_MAX, 1, &r));
}

TEST(Cli, RandomArgumentListsNeverCrash) {
  const std::vector<std::string> vocab{"--batch",    "--dim",
                                       "--seqlen",   "--width",
                                       "--dtype",    "--bias",
                                       "--silu",     "--iters",
                                       "--warmup",   "--seed",
                                       "--save-npy", "--profile-csv",
                                       "--summary",  "--help",
                                       "0",          "1",
                                       "-1",         "4",
                                       "fp16",       "bf16",
                                       "x",          "",
                                       "=",          "--",
                                       "--=3",       "99999999999999999999",
                                       "--batch=",   "--dim=7",
                                       "--width=3",  "--dtype=",
                                       "-"};
  Rng rng(2026);
  int ok = 0, errors = 0, help = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::string> args;
    const int n = static_cast<int>(rng.range(0, 8));
    for (int i = 0; i < n; ++i) {
      if (rng.range(0, 9) == 0) {  // sometimes random bytes
        std::string s;
        for (int k = static_cast<int>(rng.range(0, 6)); k > 0; --k)
          s += static_cast<char>(rng.range(1, 255));
        args.push_back(s);
      } else {
        args.push_back(
            vocab[static_cast<size_t>(rng.range(0, static_cast<int64_t>(vocab.size()) - 1))]);
      }
    }
    Options opt;
    const ParseResult r = parse(args, &opt);
    if (r.status == ParseStatus::ok) {
      ++ok;  // whatever was accepted is within the limits
      ASSERT_GE(opt.batch, 1);
      ASSERT_LE(opt.batch, Limits::max_batch);
      ASSERT_GE(opt.width, 2);
      ASSERT_LE(opt.width, 4);
      ASSERT_NE(opt.dtype, Dtype::bf16);
      ASSERT_FALSE(opt.bias);
    } else if (r.status == ParseStatus::error) {
      ++errors;
      ASSERT_FALSE(r.message.empty());
    } else {
      ++help;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(errors, 0);
  EXPECT_GT(help, 0);
}

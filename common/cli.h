// The shared command line of every chapter.
//
// Parsing never touches the GPU: any bad input is reported as one line naming the flag and what is
// allowed, and the chapter exits with 2 before it looks for a device. A chapter declares which
// features it supports; asking for one it has not reached says in which chapter it arrives.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace conv1d {

struct Options {
  int64_t batch = 4, dim = 512, seqlen = 2048;
  int width = 4;
  Dtype dtype = Dtype::fp32;
  bool bias = false, silu = false;
  int iters = 10, warmup = 2;
  uint64_t seed = 1234;
  std::string save_npy;     // directory for .npy inputs/outputs ("" = off)
  std::string profile_csv;  // prefix of the phase CSV files ("" = off)
  std::string summary;      // file the tour appends one result line to ("" = off)
};

// Upper limits of the shared flags (the memory check catches what fits these but not the device).
struct Limits {
  static constexpr int64_t max_batch = 65535;  // grid z dimension of the batched chapters
  static constexpr int64_t max_dim = int64_t(1) << 20;
  static constexpr int64_t max_seqlen = int64_t(1) << 30;
  static constexpr int64_t max_elements = int64_t(1) << 36;  // B*D*L
  static constexpr int max_iters = 100000;
  static constexpr int max_warmup = 10000;
};

// What a chapter supports; the rest is refused with "arrives in chapter NN".
struct ChapterSpec {
  std::string number;  // "01"
  std::string name;    // "host_img2col"
  std::string title;   // one line for --help and the tour
  std::vector<Dtype> dtypes{Dtype::fp32, Dtype::fp16};
  bool bias = false, silu = false;
  // What the chapter runs, for --help: "forward", "backward" (dx, dweight, dbias) or "forward and
  // backward".
  std::string pass = "forward";
  Options defaults{};
  std::string exe_name() const { return "ch" + number + "_" + name; }
};

// A chapter's own flags (e.g. --epilogue): registered before parsing.
struct ExtraFlag {
  std::string name;  // "--epilogue"
  std::string help;
  bool takes_value = true;
  // Receives the value ("" for a switch); returns an empty string or the reason it is refused.
  std::function<std::string(const std::string&)> apply;
};
ExtraFlag int_flag(const std::string& name, int64_t* target, int64_t lo, int64_t hi,
                   const std::string& help);
ExtraFlag choice_flag(const std::string& name, std::string* target,
                      const std::vector<std::string>& choices, const std::string& help);
ExtraFlag switch_flag(const std::string& name, bool* target, const std::string& help);

enum class ParseStatus { ok, help, error };
struct ParseResult {
  ParseStatus status = ParseStatus::ok;
  std::string message;  // the error line, or the help text
};

ParseResult parse_command_line(int argc, const char* const* argv, const ChapterSpec& spec,
                               Options* opt, const std::vector<ExtraFlag>& extra = {});
std::string help_text(const ChapterSpec& spec, const std::vector<ExtraFlag>& extra = {});

// In which chapter a feature first appears ("04" for --bias); "" if every chapter has it.
std::string chapter_of_feature(const std::string& feature);

// a * b, or false when it overflows int64 (sizes are multiplied only through this).
bool checked_mul(int64_t a, int64_t b, int64_t* out);
bool checked_add(int64_t a, int64_t b, int64_t* out);

}  // namespace conv1d

#include "common/cli.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

namespace conv1d {

bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

std::string chapter_of_feature(const std::string& feature) {
  static const std::map<std::string, std::string> arrives = {
      {"--bias", "04"}, {"--silu", "04"}, {"bf16", "06"}};
  auto it = arrives.find(feature);
  return it == arrives.end() ? "" : it->second;
}

namespace {

// Strict decimal parsing: digits only (a leading '+' allowed), no trailing junk, no overflow.
bool parse_int64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  size_t i = (s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (!checked_mul(v, 10, &v) || !checked_add(v, s[i] - '0', &v)) return false;
  }
  *out = v;
  return true;
}

bool parse_uint64(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+' || s[0] == ' ') return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, uint64_t(10), &v) ||
        __builtin_add_overflow(v, uint64_t(c - '0'), &v))
      return false;
  }
  *out = v;
  return true;
}

std::string range_error(const std::string& flag, int64_t lo, int64_t hi, const std::string& got) {
  std::ostringstream o;
  o << flag << " must be an integer in [" << lo << ", " << hi << "] (got '" << got << "')";
  return o.str();
}

std::string dtype_list(const std::vector<Dtype>& ts) {
  std::string s;
  for (Dtype t : ts) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

// The shared flags and whether they take a value (their help lines are in help_text()).
struct SharedFlag {
  const char* name;
  bool takes_value;
};
const SharedFlag kShared[] = {
    {"--batch", true},   {"--dim", true},   {"--seqlen", true},   {"--width", true},
    {"--dtype", true},   {"--bias", false}, {"--silu", false},    {"--iters", true},
    {"--warmup", true},  {"--seed", true},  {"--save-npy", true}, {"--profile-csv", true},
    {"--summary", true}, {"--help", false},
};

}  // namespace

ExtraFlag int_flag(const std::string& name, int64_t* target, int64_t lo, int64_t hi,
                   const std::string& help) {
  return {name, help, true, [=](const std::string& v) -> std::string {
            int64_t x = 0;
            if (!parse_int64(v, &x) || x < lo || x > hi) return range_error(name, lo, hi, v);
            *target = x;
            return "";
          }};
}

ExtraFlag choice_flag(const std::string& name, std::string* target,
                      const std::vector<std::string>& choices, const std::string& help) {
  return {name, help, true, [=](const std::string& v) -> std::string {
            std::string all;
            for (const std::string& c : choices) {
              if (c == v) {
                *target = v;
                return "";
              }
              all += (all.empty() ? "" : ", ") + c;
            }
            return name + " must be one of " + all + " (got '" + v + "')";
          }};
}

ExtraFlag switch_flag(const std::string& name, bool* target, const std::string& help) {
  return {name, help, false, [=](const std::string&) -> std::string {
            *target = true;
            return "";
          }};
}

std::string help_text(const ChapterSpec& spec, const std::vector<ExtraFlag>& extra) {
  std::ostringstream o;
  const Options& d = spec.defaults;
  o << spec.exe_name() << ": chapter " << spec.number << " - " << spec.title << "\n\n"
    << "Runs the causal depthwise conv1d " << spec.pass
    << ", verifies it against the fp64 CPU reference and reports\n"
    << "where the time goes. Exit codes: 0 verified, 1 failed, 2 bad input, 77 no GPU.\n\n"
    << "usage: " << spec.exe_name() << " [flags]   (--flag VALUE or --flag=VALUE)\n";
  auto line = [&](const std::string& flag, const std::string& help) {
    o << "  " << flag << std::string(flag.size() < 24 ? 24 - flag.size() : 1, ' ') << help << "\n";
  };
  line("--batch N", "batch size B, 1.." + std::to_string(Limits::max_batch) + " (default " +
                        std::to_string(d.batch) + ")");
  line("--dim N", "channels D, 1.." + std::to_string(Limits::max_dim) + " (default " +
                      std::to_string(d.dim) + ")");
  line("--seqlen N", "sequence length L, 1.." + std::to_string(Limits::max_seqlen) + " (default " +
                         std::to_string(d.seqlen) + ")");
  line("--width N", "kernel width W: 2, 3 or 4 (default " + std::to_string(d.width) + ")");
  line("--dtype T",
       "storage type: " + dtype_list(spec.dtypes) + " (default " + dtype_name(d.dtype) + ")");
  for (const char* f : {"--bias", "--silu"}) {
    const bool has = std::string(f) == "--bias" ? spec.bias : spec.silu;
    line(f, std::string(f) == "--bias" ? "add a bias per channel" : "apply SiLU to the output");
    if (!has) o << std::string(26, ' ') << "(arrives in chapter " << chapter_of_feature(f) << ")\n";
  }
  line("--iters N", "timed iterations, 1.." + std::to_string(Limits::max_iters) + " (default " +
                        std::to_string(d.iters) + ")");
  line("--warmup N", "warm-up iterations, 0.." + std::to_string(Limits::max_warmup) + " (default " +
                         std::to_string(d.warmup) + ")");
  line("--seed N", "seed of the random inputs (default " + std::to_string(d.seed) + ")");
  line("--save-npy DIR",
       spec.pass != "forward"
           ? "write the inputs, the outputs and the references as .npy files into DIR"
           : "write x, weight, bias, out and the reference as .npy files into DIR");
  line("--profile-csv PREFIX", "write phase records to PREFIX_stats.csv and PREFIX_trace.csv");
  line("--summary FILE", "append one tab-separated result line per variant (used by the tour)");
  for (const ExtraFlag& e : extra) line(e.name + (e.takes_value ? " V" : ""), e.help);
  line("--help", "this text");
  return o.str();
}

ParseResult parse_command_line(int argc, const char* const* argv, const ChapterSpec& spec,
                               Options* opt, const std::vector<ExtraFlag>& extra) {
  *opt = spec.defaults;
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == nullptr) continue;
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return {ParseStatus::help, help_text(spec, extra)};
  }
  auto fail = [](const std::string& msg) { return ParseResult{ParseStatus::error, msg}; };

  for (int i = 1; i < argc; ++i) {
    if (argv[i] == nullptr) continue;
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0)
      return fail("unexpected argument '" + arg + "' (flags start with --; see --help)");
    std::string name = arg, value;
    bool inline_value = false;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }

    const SharedFlag* shared = nullptr;
    for (const SharedFlag& f : kShared)
      if (name == f.name) shared = &f;
    const ExtraFlag* ext = nullptr;
    for (const ExtraFlag& e : extra)
      if (name == e.name) ext = &e;
    if (!shared && !ext) return fail("unknown flag '" + name + "' (see --help)");
    const bool takes_value = shared ? shared->takes_value : ext->takes_value;

    if (takes_value && !inline_value) {
      if (i + 1 >= argc || argv[i + 1] == nullptr)
        return fail(name + " needs a value (see --help)");
      value = argv[++i];
    }
    if (!takes_value && inline_value)
      return fail(name + " is a switch and takes no value (got '" + value + "')");

    if (ext) {
      const std::string err = ext->apply(value);
      if (!err.empty()) return fail(err);
      continue;
    }

    int64_t v = 0;
    if (name == "--batch" || name == "--dim" || name == "--seqlen") {
      const int64_t hi = name == "--batch" ? Limits::max_batch
                         : name == "--dim" ? Limits::max_dim
                                           : Limits::max_seqlen;
      if (!parse_int64(value, &v) || v < 1 || v > hi) return fail(range_error(name, 1, hi, value));
      (name == "--batch" ? opt->batch : name == "--dim" ? opt->dim : opt->seqlen) = v;
    } else if (name == "--width") {
      if (!parse_int64(value, &v) || v < 2 || v > 4)
        return fail("--width must be 2, 3 or 4 (got '" + value + "')");
      opt->width = static_cast<int>(v);
    } else if (name == "--iters") {
      if (!parse_int64(value, &v) || v < 1 || v > Limits::max_iters)
        return fail(range_error(name, 1, Limits::max_iters, value));
      opt->iters = static_cast<int>(v);
    } else if (name == "--warmup") {
      if (!parse_int64(value, &v) || v < 0 || v > Limits::max_warmup)
        return fail(range_error(name, 0, Limits::max_warmup, value));
      opt->warmup = static_cast<int>(v);
    } else if (name == "--seed") {
      if (!parse_uint64(value, &opt->seed))
        return fail("--seed must be an integer in [0, 18446744073709551615] (got '" + value + "')");
    } else if (name == "--dtype") {
      Dtype t;
      if (!parse_dtype(value, &t))
        return fail("--dtype must be one of fp32, fp16, bf16 (got '" + value + "')");
      bool supported = false;
      for (Dtype s : spec.dtypes) supported |= (s == t);
      if (!supported) {
        const std::string when = chapter_of_feature(dtype_name(t));
        return fail(
            "--dtype " + std::string(dtype_name(t)) +
            (when.empty() ? std::string(" is not supported") : " arrives in chapter " + when) +
            " (this is chapter " + spec.number + "; here: " + dtype_list(spec.dtypes) + ")");
      }
      opt->dtype = t;
    } else if (name == "--bias" || name == "--silu") {
      const bool has = name == "--bias" ? spec.bias : spec.silu;
      if (!has)
        return fail(name + " arrives in chapter " + chapter_of_feature(name) +
                    " (this is chapter " + spec.number + ")");
      (name == "--bias" ? opt->bias : opt->silu) = true;
    } else if (name == "--save-npy" || name == "--profile-csv" || name == "--summary") {
      if (value.empty()) return fail(name + " needs a non-empty path");
      (name == "--save-npy"      ? opt->save_npy
       : name == "--profile-csv" ? opt->profile_csv
                                 : opt->summary) = value;
    }
  }

  int64_t bd = 0, bdl = 0;
  if (!checked_mul(opt->batch, opt->dim, &bd) || !checked_mul(bd, opt->seqlen, &bdl) ||
      bdl > Limits::max_elements) {
    std::ostringstream o;
    o << "--batch x --dim x --seqlen = " << opt->batch << " x " << opt->dim << " x " << opt->seqlen
      << " exceeds the limit of " << Limits::max_elements << " elements";
    return fail(o.str());
  }
  return {};
}

}  // namespace conv1d

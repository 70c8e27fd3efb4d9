// vtllm tokenize DIR: text on stdin -> ids on stdout (or pieces, or back to text).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "text/tokenizer.h"

namespace vtllm::cli {

namespace {

constexpr const char* kUsage =
    "usage: vtllm tokenize DIR [--pieces | --decode] [--no-special] [--skip-special]\n"
    "  DIR is a model directory (tokenizer.json, tokenizer_config.json) or a tokenizer.json.\n"
    "  Reads UTF-8 text from stdin (all of it, newlines included) and prints the ids on\n"
    "  one line, separated by single spaces.\n"
    "  --pieces        print one 'id<TAB>piece' line per token instead\n"
    "  --decode        read ids (separated by white space) and print their text, as is\n"
    "  --no-special    do not add the post-processor's special tokens (e.g. BOS)\n"
    "  --skip-special  with --decode: leave out special tokens\n";

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

// Control characters would garble a one-line-per-token listing: show them escaped.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args args(argc, argv, {}, {"help", "pieces", "decode", "no-special", "skip-special"});
  if (args.has("help")) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  VT_REQUIRE(!(args.has("pieces") && args.has("decode")), "--pieces and --decode exclude each other");
  const std::string& where = args.positional()[0];
  const text::Tokenizer tok = std::filesystem::is_directory(where)
                                  ? text::Tokenizer::from_dir(where)
                                  : text::Tokenizer::from_file(where);
  const std::string input = read_stdin();

  if (args.has("decode")) {
    std::vector<text::TokenId> ids;
    std::istringstream in(input);
    for (std::string word; in >> word;) {
      size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      VT_REQUIRE(used == word.size() && v >= 0 && v <= INT32_MAX, "'", word,
               "' is not a token id (a non-negative integer)");
      ids.push_back(static_cast<text::TokenId>(v));
    }
    const std::string out = tok.decode(ids, args.has("skip-special"));
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  const std::vector<text::TokenId> ids = tok.encode(input, !args.has("no-special"));
  if (args.has("pieces")) {
    for (text::TokenId id : ids)
      std::printf("%d\t%s\n", id, printable(tok.id_to_token(id).value_or("")).c_str());
    return 0;
  }
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line.push_back(' ');
    line += std::to_string(ids[i]);
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stdout);
  return 0;
}

}  // namespace vtllm::cli

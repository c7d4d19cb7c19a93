// Weights file (all integers little-endian):
//   "DBSWGT\0\0" | u32 version = 1 | str model | i32 c, h, w | u32 layers |
//   per layer: str name, u64 params | u64 total | total float32 values
// where str is a u32 length followed by the bytes.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/nn/model.h"

namespace dbs::nn {
namespace {

constexpr char kMagic[8] = {'D', 'B', 'S', 'W', 'G', 'T', 0, 0};
constexpr std::uint32_t kVersion = 1;

template <typename T>
void put(std::ostream& o, T v) {
  o.write(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_str(std::ostream& o, const std::string& s) {
  put(o, static_cast<std::uint32_t>(s.size()));
  o.write(s.data(), static_cast<std::streamsize>(s.size()));
}

class Reader {
 public:
  Reader(std::string path, std::string bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}
  void read(void* dst, std::size_t n, const char* what) {
    if (bytes_.size() - pos_ < n)
      throw InputError(path_ + ": truncated at byte " + std::to_string(bytes_.size()) +
                       " while reading " + what);
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
  }
  template <typename T>
  T get(const char* what) {
    T v;
    read(&v, sizeof v, what);
    return v;
  }
  std::string str(const char* what) {
    const auto n = get<std::uint32_t>(what);
    if (n > 4096)
      throw InputError(path_ + ": " + what + " is implausibly long (" + std::to_string(n) +
                       " bytes)");
    std::string s(n, '\0');
    read(s.data(), n, what);
    return s;
  }
  bool at_end() const { return pos_ == bytes_.size(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_, bytes_;
  std::size_t pos_ = 0;
};

}  // namespace

void save_weights(const Model& model, const std::string& path) {
  std::ostringstream o;
  o.write(kMagic, sizeof kMagic);
  put(o, kVersion);
  put_str(o, model.name());
  const Shape in = model.input_shape();
  put<std::int32_t>(o, in.c);
  put<std::int32_t>(o, in.h);
  put<std::int32_t>(o, in.w);
  const auto info = model.layers_info();
  put(o, static_cast<std::uint32_t>(info.size()));
  for (const auto& l : info) {
    put_str(o, l.name);
    put(o, static_cast<std::uint64_t>(l.params));
  }
  put(o, static_cast<std::uint64_t>(model.param_count()));
  const auto p = model.params();
  o.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size_bytes()));
  write_file_atomic(path, o.str());
}

void load_weights(Model& model, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open weights file");
  std::ostringstream buf;
  buf << f.rdbuf();
  Reader r(path, buf.str());
  char magic[sizeof kMagic];
  r.read(magic, sizeof magic, "magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw InputError(path + ": not a dbs weights file (wrong magic)");
  const auto version = r.get<std::uint32_t>("version");
  if (version != kVersion)
    throw InputError(path + ": weights format version " + std::to_string(version) +
                     " is not supported (this build reads version " + std::to_string(kVersion) +
                     ")");
  const std::string name = r.str("model name");
  if (name != model.name())
    throw InputError(path + ": holds weights of model '" + name + "', not '" + model.name() + "'");
  Shape in;
  in.c = r.get<std::int32_t>("input shape");
  in.h = r.get<std::int32_t>("input shape");
  in.w = r.get<std::int32_t>("input shape");
  if (!(in == model.input_shape()))
    throw InputError(path + ": input shape " + in.str() + " does not match the model's " +
                     model.input_shape().str());
  const auto info = model.layers_info();
  const auto layers = r.get<std::uint32_t>("layer count");
  if (layers != info.size())
    throw InputError(path + ": " + std::to_string(layers) + " layers, the model has " +
                     std::to_string(info.size()));
  for (std::size_t i = 0; i < info.size(); ++i) {
    const std::string lname = r.str("layer name");
    const auto count = r.get<std::uint64_t>("layer parameter count");
    if (lname != info[i].name || count != info[i].params)
      throw InputError(path + ": layer " + std::to_string(i) + " is " + lname + " with " +
                       std::to_string(count) + " parameters, the model has " + info[i].name +
                       " with " + std::to_string(info[i].params));
  }
  const auto total = r.get<std::uint64_t>("parameter count");
  if (total != model.param_count())
    throw InputError(path + ": " + std::to_string(total) + " parameters, the model has " +
                     std::to_string(model.param_count()));
  const auto p = model.params();
  r.read(p.data(), p.size_bytes(), "parameters");
  if (!r.at_end()) throw InputError(path + ": trailing bytes after the parameters");
}

}  // namespace dbs::nn

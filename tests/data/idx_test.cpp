// IDX reader and dataset loader: round trips (plain and gzip) and every rejection's message.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lib/common/error.h"
#include "lib/data/dataset.h"
#include "lib/data/idx.h"

namespace {

using dbs::InputError;
using dbs::data::read_idx;
using Bytes = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "dbs-idx-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Matcher for a message containing text (doctest::String has no std::string constructor).
doctest::Contains has(const std::string& text) { return doctest::Contains(text.c_str()); }

// An IDX file: 00 00 <type> <ndims>, big-endian uint32 dims, then values.
Bytes idx_bytes(const std::vector<std::uint32_t>& dims, const Bytes& values,
                std::uint8_t type = 0x08) {
  Bytes out = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (const std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<std::uint8_t>(d >> shift));
    }
  }
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

Bytes iota_bytes(std::size_t n) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(i * 7 % 256);
  return out;
}

void write_plain(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

void write_gz(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) > 0);
  REQUIRE(gzclose(f) == Z_OK);
}

Bytes read_plain(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("Idx.RoundTrip.PlainAndGzip") {
  TempDir dir;
  const Bytes values = iota_bytes(3 * 4 * 5);
  const Bytes file = idx_bytes({3, 4, 5}, values);
  write_plain(dir.file("a.idx"), file);
  write_gz(dir.file("a.idx.gz"), file);
  for (const std::string name : {"a.idx", "a.idx.gz"}) {
    CAPTURE(name);
    const auto arr = read_idx(dir.file(name), 3);
    CHECK(arr.dims == std::vector<std::uint32_t>{3, 4, 5});
    CHECK(arr.values == values);
  }
}

TEST_CASE("Idx.MaxItems.ReadsOnlyTheFirstItems") {
  TempDir dir;
  const Bytes values = iota_bytes(3 * 4 * 5);
  // Past the first items the file may be anything: a limited read does not look there.
  Bytes file = idx_bytes({3, 4, 5}, values);
  file.resize(file.size() - 7);
  write_gz(dir.file("cut.idx.gz"), file);
  const auto two = read_idx(dir.file("cut.idx.gz"), 3, 2);
  CHECK(two.dims == std::vector<std::uint32_t>{3, 4, 5});  // as declared
  CHECK(two.items == 2);
  CHECK(two.values == Bytes(values.begin(), values.begin() + 2 * 4 * 5));
  // More items than the file declares, or 0: the whole file, length checked.
  REQUIRE_THROWS_WITH_AS(read_idx(dir.file("cut.idx.gz"), 3, 3), has("truncated at byte"),
                         InputError);
  REQUIRE_THROWS_WITH_AS(read_idx(dir.file("cut.idx.gz"), 3, 0), has("truncated at byte"),
                         InputError);
  write_plain(dir.file("whole.idx"), idx_bytes({3, 4, 5}, values));
  const auto all = read_idx(dir.file("whole.idx"), 3, 9);
  CHECK(all.items == 3);
  CHECK(all.values == values);
}

TEST_CASE("Idx.DetectsGzipByMagicNotName") {
  TempDir dir;
  const Bytes file = idx_bytes({6}, iota_bytes(6));
  write_gz(dir.file("gzip-without-suffix"), file);
  write_plain(dir.file("plain-with-suffix.gz"), file);
  CHECK(read_idx(dir.file("gzip-without-suffix")).values == iota_bytes(6));
  CHECK(read_idx(dir.file("plain-with-suffix.gz")).values == iota_bytes(6));
}

TEST_CASE("Idx.Rejects.WrongMagic") {
  TempDir dir;
  const std::string p = dir.file("bad");
  write_plain(p, {0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 1, 9});
  REQUIRE_THROWS_WITH_AS(read_idx(p), has(p + ": wrong magic"), InputError);
}

TEST_CASE("Idx.Rejects.UnsupportedDataType") {
  TempDir dir;
  const std::string p = dir.file("floats");
  write_plain(p, idx_bytes({1}, {0, 0, 0, 0}, 0x0d));
  REQUIRE_THROWS_WITH_AS(read_idx(p), has(p + ": unsupported data type 0x0d"),
                         InputError);
}

TEST_CASE("Idx.Rejects.TruncatedHeader") {
  TempDir dir;
  const std::string p = dir.file("short-magic");
  write_plain(p, {0, 0});
  REQUIRE_THROWS_WITH_AS(read_idx(p),
                         has(p + ": truncated header at byte 2: expected 4 bytes"),
                         InputError);
  // Magic says 3 dims (16 header bytes) but only 2 dims follow.
  const std::string q = dir.file("short-dims.gz");
  write_gz(q, {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1});
  REQUIRE_THROWS_WITH_AS(read_idx(q),
                         has(q + ": truncated header at byte 12: expected 16 bytes"),
                         InputError);
}

TEST_CASE("Idx.Rejects.TruncatedData.ReportsOffset") {
  TempDir dir;
  Bytes file = idx_bytes({10, 10}, iota_bytes(100));  // 12 header + 100 data bytes
  file.resize(12 + 37);
  write_plain(dir.file("cut"), file);
  write_gz(dir.file("cut.gz"), file);
  for (const std::string name : {"cut", "cut.gz"}) {
    const std::string p = dir.file(name);
    REQUIRE_THROWS_WITH_AS(read_idx(p),
                           has(p + ": truncated at byte 49: expected 112 bytes, got 49"),
                           InputError);
  }
}

TEST_CASE("Idx.Rejects.GzipStreamCutShort") {
  TempDir dir;
  const std::string full = dir.file("full.gz");
  write_gz(full, idx_bytes({4000}, iota_bytes(4000)));
  Bytes gz = read_plain(full);
  gz.resize(gz.size() / 2);
  const std::string p = dir.file("half.gz");
  write_plain(p, gz);
  REQUIRE_THROWS_WITH_AS(read_idx(p), has(p + ": truncated at byte "), InputError);
  REQUIRE_THROWS_WITH_AS(read_idx(p), has("expected 4008 bytes"), InputError);
  REQUIRE_THROWS_WITH_AS(read_idx(p), has("(gzip: unexpected end of file)"), InputError);
}

TEST_CASE("Idx.Rejects.GzipCorruption") {
  TempDir dir;
  const std::string p = dir.file("badcrc.gz");
  write_gz(p, idx_bytes({50}, iota_bytes(50)));
  Bytes gz = read_plain(p);
  gz[gz.size() - 8] ^= 0xff;  // the gzip trailer's CRC-32 of the data
  write_plain(p, gz);
  REQUIRE_THROWS_WITH_AS(read_idx(p), has(p + ": gzip error after byte "), InputError);
  REQUIRE_THROWS_WITH_AS(read_idx(p), has(": incorrect data check"), InputError);
}

TEST_CASE("Idx.Rejects.TrailingBytes") {
  TempDir dir;
  Bytes file = idx_bytes({2, 2}, iota_bytes(4));
  file.insert(file.end(), {1, 2, 3});
  const std::string p = dir.file("long.gz");
  write_gz(p, file);
  REQUIRE_THROWS_WITH_AS(read_idx(p),
                         has(p + ": 3 trailing bytes after the data, which ends at byte 16"),
                         InputError);
}

TEST_CASE("Idx.Rejects.WrongNumberOfDimensions") {
  TempDir dir;
  const std::string p = dir.file("labels");
  write_plain(p, idx_bytes({5}, iota_bytes(5)));
  REQUIRE_THROWS_WITH_AS(read_idx(p, 3), has(p + ": expected 3 dimensions, found 1"),
                         InputError);
  const std::string q = dir.file("five-dims");
  write_plain(q, idx_bytes({1, 1, 1, 1, 1}, {7}));
  REQUIRE_THROWS_WITH_AS(read_idx(q), has(q + ": unsupported number of dimensions 5"),
                         InputError);
  const std::string r = dir.file("zero-dims");
  write_plain(r, {0, 0, 8, 0});
  REQUIRE_THROWS_WITH_AS(read_idx(r), has(r + ": unsupported number of dimensions 0"),
                         InputError);
}

TEST_CASE("Idx.Rejects.ZeroDimension") {
  TempDir dir;
  const std::string p = dir.file("empty");
  write_plain(p, idx_bytes({4, 0, 3}, {}));
  REQUIRE_THROWS_WITH_AS(read_idx(p), has(p + ": dimension 1 is zero"), InputError);
}

TEST_CASE("Idx.Rejects.MissingFile") {
  TempDir dir;
  const std::string p = dir.file("nope");
  REQUIRE_THROWS_WITH_AS(read_idx(p), has(p + ": cannot open: No such file"),
                         InputError);
}

TEST_CASE("Dataset.LoadIdxPair.ScalesPixelsAndKeepsLabels") {
  TempDir dir;
  write_gz(dir.file("img.gz"), idx_bytes({2, 1, 3}, {0, 51, 255, 255, 102, 0}));
  write_plain(dir.file("lab"), idx_bytes({2}, {9, 0}));
  const auto ds = dbs::data::load_idx_pair(dir.file("img.gz"), dir.file("lab"));
  CHECK(ds.n == 2);
  CHECK(ds.rows == 1);
  CHECK(ds.cols == 3);
  CHECK(ds.images == std::vector<float>{0.0F, 0.2F, 1.0F, 1.0F, 0.4F, 0.0F});
  CHECK(ds.labels == std::vector<std::int32_t>{9, 0});
  const auto first = ds.head(1);
  CHECK(first.n == 1);
  CHECK(first.images == std::vector<float>{0.0F, 0.2F, 1.0F});
  CHECK(first.labels == std::vector<std::int32_t>{9});
  CHECK(ds.head(0).n == 2);
  CHECK(ds.head(5).n == 2);
}

TEST_CASE("Dataset.LoadIdxPair.Limit") {
  TempDir dir;
  write_plain(dir.file("img"), idx_bytes({3, 1, 2}, {0, 51, 102, 153, 204, 255}));
  write_plain(dir.file("lab"), idx_bytes({3}, {4, 5, 6}));
  const auto ds = dbs::data::load_idx_pair(dir.file("img"), dir.file("lab"), 10, 2);
  CHECK(ds.n == 2);
  CHECK(ds.images == std::vector<float>{0.0F, 0.2F, 0.4F, 0.6F});
  CHECK(ds.labels == std::vector<std::int32_t>{4, 5});
  // The declared counts are still compared.
  write_plain(dir.file("lab2"), idx_bytes({4}, {4, 5, 6, 7}));
  REQUIRE_THROWS_WITH_AS(dbs::data::load_idx_pair(dir.file("img"), dir.file("lab2"), 10, 2),
                         has("holds 3 images but"), InputError);
}

TEST_CASE("Dataset.Rejects.CountMismatch") {
  TempDir dir;
  write_plain(dir.file("img"), idx_bytes({3, 2, 2}, iota_bytes(12)));
  write_plain(dir.file("lab"), idx_bytes({2}, {1, 1}));
  REQUIRE_THROWS_WITH_AS(
      dbs::data::load_idx_pair(dir.file("img"), dir.file("lab")),
      has(dir.file("img") + " holds 3 images but " + dir.file("lab") + " holds 2 labels"),
      InputError);
}

TEST_CASE("Dataset.Rejects.SwappedFiles") {
  TempDir dir;
  write_plain(dir.file("img"), idx_bytes({2, 1, 1}, {1, 2}));
  write_plain(dir.file("lab"), idx_bytes({2}, {1, 1}));
  REQUIRE_THROWS_WITH_AS(dbs::data::load_idx_pair(dir.file("lab"), dir.file("img")),
                         has(dir.file("lab") + ": expected 3 dimensions, found 1"), InputError);
}

TEST_CASE("Dataset.Rejects.LabelOutOfRange") {
  TempDir dir;
  write_plain(dir.file("img"), idx_bytes({3, 1, 1}, {1, 2, 3}));
  write_plain(dir.file("lab"), idx_bytes({3}, {1, 4, 2}));
  REQUIRE_THROWS_WITH_AS(dbs::data::load_idx_pair(dir.file("img"), dir.file("lab"), 4),
                         has(dir.file("lab") + ": label 4 at index 1 is outside [0, 4)"),
                         InputError);
}

TEST_CASE("Dataset.FashionMnist.PrefersGzipAndNamesMissingFile") {
  TempDir dir;
  const Bytes images = idx_bytes({2, 2, 2}, iota_bytes(8));
  const Bytes labels = idx_bytes({2}, {3, 5});
  for (const std::string split : {"train", "t10k"}) {
    write_gz(dir.file(split + "-images-idx3-ubyte.gz"), images);
    write_plain(dir.file(split + "-images-idx3-ubyte"), {0xde, 0xad});  // ignored: .gz wins
    write_plain(dir.file(split + "-labels-idx1-ubyte"), labels);
  }
  const std::string root = dir.file("");
  const auto fm = dbs::data::load_fashion_mnist(root);
  CHECK(fm.train.n == 2);
  CHECK(fm.test.labels == std::vector<std::int32_t>{3, 5});

  fs::remove(dir.file("t10k-labels-idx1-ubyte"));
  REQUIRE_THROWS_WITH_AS(dbs::data::load_fashion_mnist(root),
                         has(root + ": neither t10k-labels-idx1-ubyte.gz nor "
                                                  "t10k-labels-idx1-ubyte found"),
                         InputError);
  REQUIRE_THROWS_WITH_AS(dbs::data::load_fashion_mnist(root),
                         has("apt-get install dataset-fashion-mnist"), InputError);
}

TEST_CASE("Dataset.FashionMnist.LoadsInstalledPackage") {
  if (!fs::exists(dbs::data::kDefaultDataDir)) {
    MESSAGE("skipped: " << dbs::data::kDefaultDataDir << " missing");
    return;
  }
  const auto fm = dbs::data::load_fashion_mnist();
  CHECK(fm.train.n == 60000);
  CHECK(fm.test.n == 10000);
  for (const auto* ds : {&fm.train, &fm.test}) {
    CHECK(ds->rows == 28);
    CHECK(ds->cols == 28);
    CHECK(ds->images.size() == ds->n * 28 * 28);
    CHECK(ds->labels.size() == ds->n);
    const auto [lo, hi] = std::minmax_element(ds->labels.begin(), ds->labels.end());
    CHECK(*lo == 0);
    CHECK(*hi == 9);
    const auto [pmin, pmax] = std::minmax_element(ds->images.begin(), ds->images.end());
    CHECK(*pmin == 0.0F);
    CHECK(*pmax == 1.0F);
  }
  // The first samples alone: the same as the head of the whole set.
  const auto few = dbs::data::load_fashion_mnist(dbs::data::kDefaultDataDir, 100, 10);
  CHECK(few.train.n == 100);
  CHECK(few.test.n == 10);
  CHECK(few.train.images == fm.train.head(100).images);
  CHECK(few.train.labels == fm.train.head(100).labels);
  CHECK(few.test.labels == fm.test.head(10).labels);
}

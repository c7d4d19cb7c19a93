// Write a whole file atomically: the bytes go to "<path>.tmp.<pid>", are flushed and fsynced,
// then renamed over <path>. A reader sees the old file or the new one, never half of one.
#pragma once

#include <string>
#include <string_view>

namespace dbs {

// The file gets `mode` (less the umask) at creation. Throws InputError naming the path on any
// failure; the temporary file is removed then.
void write_file_atomic(const std::string& path, std::string_view bytes, unsigned mode = 0644);

}  // namespace dbs

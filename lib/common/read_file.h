// Read what is left of an open stream into one string: sized up front where the stream can
// seek (a file), so that a file of many megabytes is one allocation and one copy.
#pragma once

#include <istream>
#include <string>

namespace dbs {

// The bytes from the stream's position to its end. The stream is at its end after, with eofbit
// set (and failbit, as any read past the end); badbit is set on a read error.
std::string read_rest(std::istream& in);

}  // namespace dbs

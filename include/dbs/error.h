// Errors of dbs. One base type; what a caller does after each kind:
//   InputError  - a file, field, message or value from outside is bad: report it and stop using
//                 that input (a process exits non-zero; the daemon drops that one client).
//   ConfigError - an option or combination of options is invalid, or the ranks of a job
//                 disagree on them: print it, exit 2.
//   CommError   - a peer or the network failed: the job cannot go on; abort it.
//   CheckError  - a broken invariant inside dbs (a bug): abort with the message.
#pragma once

#include <stdexcept>

namespace dbs {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InputError : public Error {
 public:
  using Error::Error;
};

class ConfigError : public Error {
 public:
  using Error::Error;
};

class CommError : public Error {
 public:
  using Error::Error;
};

class CheckError : public Error {
 public:
  using Error::Error;
};

}  // namespace dbs

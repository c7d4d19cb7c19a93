// Errors of dbs: the error types (and what a caller does after each) are public, in
// <dbs/error.h>; here, for dbs itself, the check macros for broken invariants.
#pragma once

#include <dbs/error.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace dbs {

namespace detail {
[[noreturn]] void check_failed(const char* file, int line, const std::string& what);

template <typename A, typename B>
[[noreturn]] void check_op_failed(const char* file, int line, const char* expr, const A& a,
                                  const B& b) {
  std::ostringstream os;
  os << expr << " (" << a << " vs " << b << ")";
  check_failed(file, line, os.str());
}
}  // namespace detail

}  // namespace dbs

// DBS_CHECK(cond): invariant; throws CheckError naming file, line and the expression.
#define DBS_CHECK(cond)                                                  \
  do {                                                                   \
    if (!(cond)) ::dbs::detail::check_failed(__FILE__, __LINE__, #cond); \
  } while (0)

// DBS_CHECK_OP(a, op, b): as DBS_CHECK, and also prints both values.
#define DBS_CHECK_OP(a, op, b)                                                               \
  do {                                                                                       \
    const auto& dbs_a_ = (a);                                                                \
    const auto& dbs_b_ = (b);                                                                \
    if (!(dbs_a_ op dbs_b_))                                                                 \
      ::dbs::detail::check_op_failed(__FILE__, __LINE__, #a " " #op " " #b, dbs_a_, dbs_b_); \
  } while (0)
#define DBS_CHECK_EQ(a, b) DBS_CHECK_OP(a, ==, b)
#define DBS_CHECK_LE(a, b) DBS_CHECK_OP(a, <=, b)
#define DBS_CHECK_LT(a, b) DBS_CHECK_OP(a, <, b)

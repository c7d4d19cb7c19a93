// What the files of the C ABI share: guard(), which runs a call's body and turns any exception
// into the call's dbs_status and the thread's last-error message, need(), and the dbs_remote
// handle (a dbs::Remote).
#pragma once

#include <dbs/dbs.h>
#include <dbs/error.h>
#include <dbs/planner.h>

#include <exception>
#include <new>
#include <string>

struct dbs_remote {
  dbs::Remote remote;
};

namespace dbs::api {

// The message of the last failed call on this thread (dbs_last_error).
inline thread_local std::string last_error;

template <typename F>
dbs_status guard(F&& body) {
  try {
    body();
    last_error.clear();
    return DBS_OK;
  } catch (const InputError& e) {
    last_error = e.what();
    return DBS_ERROR_INPUT;
  } catch (const ConfigError& e) {
    last_error = e.what();
    return DBS_ERROR_CONFIG;
  } catch (const CommError& e) {
    last_error = e.what();
    return DBS_ERROR_COMM;
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
    return DBS_ERROR_INTERNAL;
  } catch (const std::exception& e) {
    last_error = e.what();
    return DBS_ERROR_INTERNAL;
  } catch (...) {
    last_error = "unknown error";
    return DBS_ERROR_INTERNAL;
  }
}

inline void need(const void* p, const char* what) {
  if (p == nullptr) throw InputError(std::string(what) + " is NULL");
}

}  // namespace dbs::api

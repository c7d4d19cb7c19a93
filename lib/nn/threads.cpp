#include "lib/nn/threads.h"

#include <tbb/global_control.h>
#include <tbb/info.h>

namespace dbs::nn {

struct ThreadLimit::Impl {
  tbb::global_control control;
};

ThreadLimit::ThreadLimit(int threads)
    : threads_(threads > 0 ? threads : available_threads()),
      impl_(new Impl{tbb::global_control(tbb::global_control::max_allowed_parallelism,
                                         static_cast<std::size_t>(threads_))}) {}

ThreadLimit::~ThreadLimit() = default;

int available_threads() {
  return tbb::info::default_concurrency();
}

}  // namespace dbs::nn

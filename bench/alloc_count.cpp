// Counts the allocations of each thread: dbs-bench replaces the global operator new (every
// form) with malloc / aligned_alloc plus one thread-local increment, and operator delete with
// free. A count of allocations per report or per plan does not move with the machine's load,
// which makes it a figure the regression gate can hold to a tight bound.
#include <cstdint>
#include <cstdlib>
#include <new>

#include "bench/bench.h"

namespace {

thread_local std::uint64_t allocations = 0;

void* allocate(std::size_t n) {
  ++allocations;
  return std::malloc(n == 0 ? 1 : n);
}

void* allocate_aligned(std::size_t n, std::align_val_t align) {
  ++allocations;
  const auto a = static_cast<std::size_t>(align);
  const std::size_t rounded = n == 0 ? a : (n + a - 1) / a * a;  // aligned_alloc's contract
  return std::aligned_alloc(a, rounded);
}

void* or_throw(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

std::uint64_t dbs::bench::thread_allocations() {
  return allocations;
}

void* operator new(std::size_t n) {
  return or_throw(allocate(n));
}
void* operator new[](std::size_t n) {
  return or_throw(allocate(n));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return or_throw(allocate_aligned(n, a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return or_throw(allocate_aligned(n, a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_aligned(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_aligned(n, a);
}

void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

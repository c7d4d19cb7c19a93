// Bandwidth-optimal ring allreduce (sum) for float buffers.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>

#include "lib/comm/wait.h"

namespace dbs::comm {

// The largest message of the ring, bytes (a segment goes in chunks of at most this).
inline constexpr std::size_t kRingChunkBytes = 1 << 20;

// In place: data[i] = sum over the ranks of comm of data[i]; collective over comm, same count
// everywhere. Each rank sends and receives 2 (p - 1) / p of the buffer in 2 (p - 1) steps, each
// step's segment pipelined in messages of at most max_chunk_bytes. All ranks end with
// bit-identical buffers; the summation order differs from MPI_Allreduce. Throws CommError on an
// MPI error (with MPI_ERRORS_RETURN set on comm). wait: how this rank waits for its messages
// (spin: MPI_Waitany / MPI_Waitall; sleep: polled with sleeps of at most kDataSleep, so that a
// rank held by a CPU quota does not spend it spinning while a slower neighbour forwards); ranks
// may differ.
void ring_allreduce_sum(MPI_Comm comm, float* data, std::size_t count,
                        std::size_t max_chunk_bytes = kRingChunkBytes, Wait wait = Wait::spin);

// The halves, over the caller's segments (counts: one per rank of comm, summing to the buffer's
// length; rank r's segment starts at counts[0] + ... + counts[r-1]): afterwards rank r's segment
// holds its sum over the ranks (reduce-scatter), or every segment holds its owner's values
// (allgather). The same ring steps as ring_allreduce_sum, so the same bytes on the wire, and
// the same waits.
void ring_reduce_scatter_sum(MPI_Comm comm, float* data, std::span<const std::size_t> counts,
                             std::size_t max_chunk_bytes = kRingChunkBytes, Wait wait = Wait::spin);
void ring_allgather(MPI_Comm comm, float* data, std::span<const std::size_t> counts,
                    std::size_t max_chunk_bytes = kRingChunkBytes, Wait wait = Wait::spin);

}  // namespace dbs::comm

// engine/include/ringload/engine/hash_stream.hpp
//
// Bytes to hash in order, handed to the process's hashing threads (one per core), which take
// several streams at a time and hash them together (LanedSha256::hash_together): the files of
// a signed model loading side by side share a core's SHA-NI pipeline instead of each leaving
// most of it idle. The worker that read the bytes only queues them and goes on.
//
//     HashStream stream;
//     stream.add({{&sha, bytes}, chunk, [&] { bytes_hashed += n; }});  // in the stream's order
//     stream.wait_idle();  // every job added so far is hashed and its `after` has run
//
// Jobs of one stream run one at a time, in the order added, each `after` before the next job;
// `keep` (what owns the bytes: a chunk, and so its slot) is dropped once the job has run.
// Jobs always progress (the threads block on nothing but the queue), so chunks held here
// cannot deadlock a bounded ring.
//
// Thread: add() from one thread at a time (a Sequencer's running piece); wait_idle() and
// drop() from any; `after` runs on a hashing thread.
#pragma once

#include "ringload/engine/laned_sha256.hpp"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <span>

namespace ringload {

class HashStream {
public:
    struct Job {
        LanedSha256::Update update; // which hash, and the bytes for it
        std::shared_ptr<const void> keep;
        std::function<void()> after;
    };

    HashStream() = default;
    ~HashStream(); // drop()
    HashStream(const HashStream&) = delete;
    HashStream& operator=(const HashStream&) = delete;

    void add(Job job);
    void wait_idle();
    // Drops the queued jobs (and what they keep), refuses later ones, and waits for a running
    // one to end: afterwards no job of this stream runs.
    void drop() noexcept;

private:
    friend class HashThreads;

    // Guarded by the hashing threads' mutex.
    std::deque<Job> jobs_;
    bool taken_ = false;  // a thread is running its front job
    bool queued_ = false; // in the threads' list of streams with jobs to take
    bool dropped_ = false;
    std::condition_variable idle_;
};

} // namespace ringload

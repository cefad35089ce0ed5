// A small persistent thread pool for the CPU kernels.
//
// A run splits its work into chunks that the caller and the pool threads claim one at a time
// from a shared cursor, so the caller never waits for a thread that the OS has not scheduled
// (on a busy machine a pool thread may sleep through a whole run: the caller then does every
// chunk itself). The cursor holds the run's epoch beside the next chunk, so a thread that
// wakes late for an old run claims nothing of a new one. Pool threads spin briefly between
// runs, yielding the core to any other runnable thread (torch's OpenMP workers share these
// cores), then sleep on a futex (std::atomic::wait). A decode step makes a run per matrix,
// tens of microseconds apart, so the spin catches most of them without a system call.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <new>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace mcp_kernels {

class ThreadPool {
 public:
  using Task = std::function<void(int64_t chunk)>;

  // Runs task(c) for every chunk c in [0, num_chunks) on up to num_threads threads.
  void run(int num_threads, int64_t num_chunks, const Task& task) {
    if (num_threads <= 1 || num_chunks <= 1) {
      for (int64_t c = 0; c < num_chunks; ++c) task(c);
      return;
    }
    std::lock_guard<std::mutex> lock(run_mutex_);
    grow(num_threads - 1);
    task_ = &task;
    num_chunks_.store(num_chunks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint32_t epoch = epoch_.load(std::memory_order_relaxed) + 1;
    cursor_.store(static_cast<uint64_t>(epoch) << 32, std::memory_order_release);
    epoch_.store(epoch, std::memory_order_release);
    epoch_.notify_all();
    drain(epoch);
    for (int i = 0; done_.load(std::memory_order_acquire) != num_chunks; ++i) {
      if ((i & 63) == 63) sched_yield(); else spin_pause();
    }
  }

  static ThreadPool& instance() {
    static ThreadPool* pool = make();
    return *pool;
  }

 private:
  static ThreadPool* make() {
    ThreadPool* pool = new ThreadPool();  // never destroyed: its threads are detached
    // A forked child has none of the parent's threads: it starts its own on its next run
    // (until then the caller does every chunk, so a run never waits on a missing thread).
    pthread_atfork(nullptr, nullptr, [] { instance().reset_after_fork(); });
    return pool;
  }

  void reset_after_fork() {
    new (&run_mutex_) std::mutex();  // a lock held by another thread at fork is gone with it
    threads_started_ = 0;
  }

  static void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  void grow(int num_threads) {
    while (threads_started_ < num_threads) {
      ++threads_started_;
      std::thread(&ThreadPool::work, this).detach();
    }
  }

  // Claims and runs chunks of run `epoch` until none is left.
  void drain(uint32_t epoch) {
    for (;;) {
      uint64_t cursor = cursor_.load(std::memory_order_acquire);
      if (static_cast<uint32_t>(cursor >> 32) != epoch) return;
      const int64_t chunk = static_cast<int64_t>(cursor & 0xffffffffu);
      if (chunk >= num_chunks_.load(std::memory_order_relaxed)) return;
      if (cursor_.compare_exchange_weak(cursor, cursor + 1, std::memory_order_acq_rel)) {
        (*task_)(chunk);  // the run cannot end before this chunk is done: task_ is its own
        done_.fetch_add(1, std::memory_order_release);
      }
    }
  }

  void work() {
    uint32_t seen = epoch_.load(std::memory_order_acquire);
    for (;;) {
      seen = wait_for_epoch(seen);
      drain(seen);
    }
  }

  uint32_t wait_for_epoch(uint32_t seen) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int i = 0;; ++i) {
      uint32_t now = epoch_.load(std::memory_order_acquire);
      if (now != seen) return now;
      if ((i & 15) == 15) {
        sched_yield();
        if (std::chrono::steady_clock::now() > until) break;
      } else {
        spin_pause();
      }
    }
    epoch_.wait(seen, std::memory_order_acquire);
    return epoch_.load(std::memory_order_acquire);
  }

  static constexpr int kSpinMicros = 200;
  std::mutex run_mutex_;
  std::atomic<uint32_t> epoch_{0};
  std::atomic<uint64_t> cursor_{0};  // epoch << 32 | next chunk
  std::atomic<int64_t> num_chunks_{0};
  std::atomic<int64_t> done_{0};
  const Task* task_ = nullptr;
  int threads_started_ = 0;
};

}  // namespace mcp_kernels

/* cuda_threads_emulation.h: the threads of a CUDA block as fibers on one host
 * thread, and their barriers; shared by the emulations of the CUDA kernels
 * (tests/cuda_kernels_emulation.h, tests/cuda_gemm_emulation.cpp).
 *
 * Why fibers and not std::thread: a block's barrier is where the emulation
 * spends its time. With a std::thread per CUDA thread, each __syncthreads of
 * a 256-thread block wakes 255 sleeping threads on a 2-core machine, about a
 * millisecond of futex calls and context switches; a fiber switch costs a
 * few nanoseconds, and making a team costs no thread creation. The switch
 * is Boost.Context's (boost::context::fiber over its assembly fcontext, for
 * every architecture Boost supports; glibc's swapcontext would make a system
 * call for the signal mask at every switch, and under AddressSanitizer its
 * interceptor clears the shadow of the whole stack switched to: over eight
 * CPU-minutes for the emulations). Fibers run on stacks mapped once and
 * reused (boost::context::preallocated).
 *
 * What it keeps from threads, and adds:
 *   - Order. After each barrier (and at the start) the threads it releases
 *     run in a pseudo-random order, each until its next barrier, from a fixed
 *     seed: a missing barrier (a thread reading a slot that another has not
 *     written yet, or has already overwritten) gives wrong data whichever
 *     way round the two threads are, and a failure replays the same way
 *     every run. A team of several blocks (a cluster: emu_team_run's
 *     group_threads) runs one block ahead of the others: the ready threads
 *     of the leading block run before any other's, so that it goes as far
 *     as its barriers let it while the others have not moved (a block that
 *     stores into another's shared memory before that one has read what it
 *     held gives wrong data); lead() picks a new order of the blocks (the
 *     cluster barrier calls it as each phase completes).
 *   - Deadlock is an error, not a hang: when every unfinished thread waits at
 *     a barrier that cannot complete (a thread returned while its block
 *     waits in __syncthreads, lanes of a warp at different shuffles), the
 *     run stops with a message.
 *   - AddressSanitizer is told of every stack switch (its fiber interface),
 *     so it checks each fiber's stack as it would a thread's.
 *
 * The emulations keep threadIdx as a plain global, set on each switch to
 * the running fiber (emu_team_run's `resumed`). */
#ifndef KCS_CUDA_THREADS_EMULATION_H
#define KCS_CUDA_THREADS_EMULATION_H
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include <sys/mman.h>

#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

namespace emu_threads {
/* Each fiber's stack: kernels keep small arrays in registers, which under
 * AddressSanitizer become stack frames with red zones; mapped once, reused. */
constexpr size_t stack_bytes = size_t(512) << 10;

struct fiber {
    boost::context::fiber context;   /* where it resumes, while switched away */
    boost::context::fiber scheduler; /* where the scheduler resumes, while it runs */
    char *stack = nullptr;
    bool done = false;
    void *fake_stack = nullptr; /* AddressSanitizer's, while switched away */
};

/* The stacks are mapped once and kept (fiber::stack): a finished fiber gives nothing back. */
struct kept_stack {
    boost::context::stack_context allocate() { std::abort(); }
    void deallocate(boost::context::stack_context &) noexcept {}
};

inline std::vector<fiber> fibers;
inline unsigned running;                /* the fiber running now */
inline unsigned finished;               /* fibers of the team that returned */
/* Fibers that may run, a queue a group (fiber f in group f / group_threads; one group unless a team has several
 * blocks), in the order they will; the first group in group_order with a ready fiber runs first. */
inline std::vector<std::deque<unsigned>> ready;
inline std::vector<unsigned> group_order;
inline unsigned group_threads = 1;
inline const void *scheduler_stack = nullptr; /* for AddressSanitizer */
inline size_t scheduler_stack_bytes = 0;
inline void *scheduler_fake_stack = nullptr;
inline std::mt19937 order(20240611);    /* fixed: a failing order replays */
inline void (*body)(unsigned, void *);
inline void *body_argument;
inline void (*resumed)(unsigned);

/* Appends fibers to their groups' ready queues in a pseudo-random order. */
inline void make_ready(std::vector<unsigned> &released)
{
    std::shuffle(released.begin(), released.end(), order);
    for (unsigned f : released)
        ready[f / group_threads].push_back(f);
}

/* A new pseudo-random order of the groups: the first leads until all its fibers wait. */
inline void lead()
{
    std::shuffle(group_order.begin(), group_order.end(), order);
}

/* From the running fiber back to the scheduler, until it is resumed. */
inline void yield()
{
    fiber &self = fibers[running];
#if EMU_ASAN
    __sanitizer_start_switch_fiber(&self.fake_stack, scheduler_stack, scheduler_stack_bytes);
#endif
    self.scheduler = std::move(self.scheduler).resume();
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(self.fake_stack, &scheduler_stack, &scheduler_stack_bytes);
#endif
}

/* A fiber's whole life: body, then back to the scheduler for good. */
inline boost::context::fiber entry(boost::context::fiber &&scheduler)
{
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &scheduler_stack, &scheduler_stack_bytes);
#endif
    const unsigned self = running;
    fibers[self].scheduler = std::move(scheduler);
    body(self, body_argument);
    fibers[self].done = true;
    finished++;
#if EMU_ASAN
    __sanitizer_start_switch_fiber(nullptr, scheduler_stack, scheduler_stack_bytes); /* its stack is done */
#endif
    return std::move(fibers[self].scheduler);
}
} // namespace emu_threads

/* A barrier of `expected` fibers of the running team (std::barrier's
 * arrive_and_wait, for fibers). */
class emu_barrier {
public:
    explicit emu_barrier(unsigned expected) : expected_(expected) { waiting_.reserve(expected); }
    emu_barrier(const emu_barrier &) = delete;
    emu_barrier &operator=(const emu_barrier &) = delete;
    void arrive_and_wait()
    {
        waiting_.push_back(emu_threads::running);
        if (waiting_.size() == expected_) {
            emu_threads::make_ready(waiting_);
            waiting_.clear();
        }
        emu_threads::yield();
    }

private:
    unsigned expected_;
    std::vector<unsigned> waiting_;
};

/* Runs body(t, argument) for t = 0 .. count - 1, each as a fiber, until all
 * have returned; resumed(t) runs each time fiber t is switched to. Fibers
 * t / group_threads are a group (a block of a cluster; count by default:
 * one group): one group leads, see Order above. */
inline void emu_team_run(unsigned count, void (*body)(unsigned, void *), void *argument, void (*resumed)(unsigned),
                         unsigned group_threads = 0)
{
    using namespace emu_threads;
    emu_threads::group_threads = group_threads > 0 && count % group_threads == 0 ? group_threads : count;
    ready.assign(count / emu_threads::group_threads, {});
    group_order.resize(ready.size());
    for (unsigned g = 0; g < group_order.size(); g++)
        group_order[g] = g;
    if (fibers.size() < count)
        fibers.resize(count);
    emu_threads::body = body;
    body_argument = argument;
    emu_threads::resumed = resumed;
    finished = 0;
    std::vector<unsigned> all(count);
    for (unsigned t = 0; t < count; t++) {
        fiber &f = fibers[t];
        if (!f.stack) {
            void *stack = mmap(nullptr, stack_bytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (stack == MAP_FAILED) {
                std::perror("emulation: mmap of a fiber stack");
                std::abort();
            }
            f.stack = (char *)stack;
        }
        f.done = false;
        f.fake_stack = nullptr;
        /* Boost.Context keeps its record of the fiber at the top of the stack it is given. */
        boost::context::stack_context whole;
        whole.size = stack_bytes;
        whole.sp = f.stack + stack_bytes;
        f.context = boost::context::fiber(std::allocator_arg,
                                          boost::context::preallocated(whole.sp, whole.size, whole), kept_stack(),
                                          entry);
        all[t] = t;
    }
    make_ready(all);
    while (finished < count) {
        std::deque<unsigned> *queue = nullptr;
        for (unsigned g : group_order)
            if (!ready[g].empty()) {
                queue = &ready[g];
                break;
            }
        if (!queue) {
            std::fprintf(stderr, "emulation: deadlock: %u of %u threads of the block wait at barriers that cannot "
                                 "complete (a thread returned or took another path while others wait in "
                                 "__syncthreads or a warp shuffle)\n", count - finished, count);
            std::abort();
        }
        running = queue->front();
        queue->pop_front();
        resumed(running);
#if EMU_ASAN
        __sanitizer_start_switch_fiber(&scheduler_fake_stack, fibers[running].stack, stack_bytes);
#endif
        fibers[running].context = std::move(fibers[running].context).resume(); /* empty once it finished */
#if EMU_ASAN
        __sanitizer_finish_switch_fiber(scheduler_fake_stack, nullptr, nullptr);
#endif
    }
}

#endif

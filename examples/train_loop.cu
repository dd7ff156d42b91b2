// train_loop.cu — a small CUDA training loop fed by a threaded data loader.
//
// Loader threads (--workers) each produce batches: --load-ms of simulated
// loading work (sleep, or with --spin 1 that much of the thread's own CPU
// time, as a decode would take: on a busy machine it takes longer), plus an optional real read
// of a chunk of --data FILE, into a host buffer (pinned with cudaMallocHost
// when --pinned 1, plain malloc otherwise).  A bounded queue (--queue) hands
// batches to the training loop, which for each of --steps steps copies the
// batch to the GPU (cudaMemcpyAsync on a stream), runs train_step_kernel
// (spins about --kernel-ms on the GPU clock), and synchronises.
//
// NVTX ranges mark each step ("train_step") and each wait for a batch
// ("next_batch"); they cost nothing unless a tool injects NVTX.  The loader's
// configuration (num_workers, pin_memory, batch_mb, load_ms) goes to
// gpustarve through its marker API (include/gpustarve.h), which does
// nothing when the program is not traced.  At the end
// one JSON line on stderr summarises the run: steps, median step time, how
// long and what share of the wall time the loop waited for batches, and that
// share, the mean step and the mean time inside the host-to-device copy call
// over the steps after the first (steady_wait_share, steady_step_ms,
// steady_copy_call_ms).
//
// Runs unchanged on a real GPU and on the simulated one (tests/simcuda/,
// LD_LIBRARY_PATH=build/simcuda), where the kernel's duration comes from
// SIMCUDA_KERNEL_US=train_step_kernel=<us> instead of the clock spin.
// Build: nvcc -cudart shared (examples/cuda.mk).  Example code: errors exit.

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "gpustarve.h"

#include <algorithm>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#define CHECK(call)                                                              \
    do {                                                                         \
        cudaError_t e_ = (call);                                                 \
        if (e_ != cudaSuccess) {                                                 \
            fprintf(stderr, "train_loop: %s failed: %s (%s)\n", #call,           \
                    cudaGetErrorString(e_), cudaGetErrorName(e_));               \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

// Spins for about `cycles` SM clock cycles; touches the batch so the copy matters.
extern "C" __global__ void train_step_kernel(long long cycles, const unsigned char *batch,
                                             size_t bytes, unsigned long long *out)
{
    long long t0 = clock64();
    unsigned long long acc = 0;
    size_t i = (size_t)threadIdx.x;
    while (clock64() - t0 < cycles) {
        if (bytes)
            acc += batch[i % bytes];
        i += 4099;
    }
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *out = acc;
}

struct options {
    int workers = 2;
    double load_ms = 20;
    double batch_mb = 4;
    int pinned = 1;
    double kernel_ms = 10;
    int steps = 50;
    int queue = 4;
    int spin = 0;
    const char *data = NULL;
};

struct batch {
    unsigned char *host;
    long index;
};

// A bounded FIFO of batch pointers guarded by one mutex and two conditions.
struct bqueue {
    std::vector<batch *> items;
    size_t head = 0, count = 0;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
    bool closed = false;

    explicit bqueue(size_t cap) : items(cap) {}
    bool push(batch *b)
    {
        pthread_mutex_lock(&mu);
        while (count == items.size() && !closed)
            pthread_cond_wait(&not_full, &mu);
        bool ok = !closed;
        if (ok) {
            items[(head + count) % items.size()] = b;
            count++;
            pthread_cond_signal(&not_empty);
        }
        pthread_mutex_unlock(&mu);
        return ok;
    }
    batch *pop()
    {
        pthread_mutex_lock(&mu);
        while (count == 0 && !closed)
            pthread_cond_wait(&not_empty, &mu);
        batch *b = NULL;
        if (count) {
            b = items[head];
            head = (head + 1) % items.size();
            count--;
            pthread_cond_signal(&not_full);
        }
        pthread_mutex_unlock(&mu);
        return b;
    }
    void close()
    {
        pthread_mutex_lock(&mu);
        closed = true;
        pthread_cond_broadcast(&not_empty);
        pthread_cond_broadcast(&not_full);
        pthread_mutex_unlock(&mu);
    }
};

static options opt;
static size_t batch_bytes;
static bqueue *ready_q, *free_q;
static int data_fd = -1;
static off_t data_size;
static long next_index;
static pthread_mutex_t index_mu = PTHREAD_MUTEX_INITIALIZER;

static double now_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double thread_cpu_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void simulate_load(double ms)
{
    if (ms <= 0)
        return;
    if (opt.spin) {
        double end = thread_cpu_ms() + ms;
        volatile double x = 1;
        while (thread_cpu_ms() < end)
            for (int i = 0; i < 1000; i++)
                x = x * 1.0000001 + 1e-9;
        return;
    }
    struct timespec ts = { (time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static void *loader_main(void *)
{
    for (;;) {
        batch *b = free_q->pop();
        if (!b)
            return NULL;
        pthread_mutex_lock(&index_mu);
        b->index = next_index++;
        pthread_mutex_unlock(&index_mu);
        simulate_load(opt.load_ms);
        if (data_fd >= 0 && data_size > 0) {
            size_t want = std::min(batch_bytes, (size_t)data_size);
            off_t at = (off_t)(((uint64_t)b->index * want) % (uint64_t)data_size);
            size_t got = 0;
            while (got < want) {
                ssize_t n = pread(data_fd, b->host + got, want - got, at);
                if (n <= 0) {
                    at = 0;   // wrap at the end of the file
                    if (n < 0 && errno != EINTR)
                        break;
                    continue;
                }
                got += (size_t)n;
                at += n;
            }
        }
        memcpy(b->host, &b->index, sizeof(b->index));  // a header the trainer checks
        if (!ready_q->push(b))
            return NULL;
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: train_loop [--workers N] [--load-ms MS] [--batch-mb MB] [--pinned 0|1]\n"
            "                  [--kernel-ms MS] [--steps N] [--queue N] [--spin 0|1] [--data FILE]\n");
}

static void parse(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "workers", required_argument, NULL, 'w' }, { "load-ms", required_argument, NULL, 'l' },
        { "batch-mb", required_argument, NULL, 'b' }, { "pinned", required_argument, NULL, 'p' },
        { "kernel-ms", required_argument, NULL, 'k' }, { "steps", required_argument, NULL, 's' },
        { "queue", required_argument, NULL, 'q' },     { "spin", required_argument, NULL, 'S' },
        { "data", required_argument, NULL, 'd' },      { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'w': opt.workers = atoi(optarg); break;
        case 'l': opt.load_ms = atof(optarg); break;
        case 'b': opt.batch_mb = atof(optarg); break;
        case 'p': opt.pinned = atoi(optarg); break;
        case 'k': opt.kernel_ms = atof(optarg); break;
        case 's': opt.steps = atoi(optarg); break;
        case 'q': opt.queue = atoi(optarg); break;
        case 'S': opt.spin = atoi(optarg); break;
        case 'd': opt.data = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc || opt.workers < 1 || opt.steps < 1 || opt.queue < 1 || opt.batch_mb <= 0 ||
        opt.load_ms < 0 || opt.kernel_ms < 0) {
        usage(stderr);
        exit(2);
    }
}

// Tell gpustarve how the loader is set up, in DataLoader terms: the loader
// threads are this program's num_workers.
static void declare_config(void)
{
    char v[32];
    snprintf(v, sizeof v, "%d", opt.workers);
    gpustarve_config("num_workers", v, 0);
    gpustarve_config("pin_memory", opt.pinned ? "True" : "False", 0);
    snprintf(v, sizeof v, "%g", opt.batch_mb);
    gpustarve_config("batch_mb", v, 0);
    snprintf(v, sizeof v, "%g", opt.load_ms);
    gpustarve_config("load_ms", v, 0);
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    declare_config();
    batch_bytes = std::max((size_t)(opt.batch_mb * 1024 * 1024), (size_t)64);
    if (opt.data) {
        data_fd = open(opt.data, O_RDONLY | O_CLOEXEC);
        if (data_fd < 0) {
            fprintf(stderr, "train_loop: cannot open %s: %s\n", opt.data, strerror(errno));
            return 1;
        }
        data_size = lseek(data_fd, 0, SEEK_END);
    }

    int ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev));
    CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;   // CUDA 13 dropped cudaDeviceProp::clockRate
    CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    const long long cycles = (long long)(opt.kernel_ms * (double)clock_khz);

    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned char *dev_batch = NULL;
    unsigned long long *dev_out = NULL;
    CHECK(cudaMalloc((void **)&dev_batch, batch_bytes));
    CHECK(cudaMalloc((void **)&dev_out, sizeof(*dev_out)));

    // Enough buffers for a full queue plus one in every worker's hands and one training.
    const int nbuf = opt.queue + opt.workers + 1;
    std::vector<batch> batches((size_t)nbuf);
    ready_q = new bqueue((size_t)nbuf);
    free_q = new bqueue((size_t)nbuf);
    for (batch &b : batches) {
        if (opt.pinned) {
            CHECK(cudaMallocHost((void **)&b.host, batch_bytes));
        } else {
            b.host = (unsigned char *)malloc(batch_bytes);
            if (!b.host) {
                fprintf(stderr, "train_loop: out of memory\n");
                return 1;
            }
        }
        memset(b.host, 0, batch_bytes);
        free_q->push(&b);
    }

    const double t_start = now_ms();
    std::vector<pthread_t> threads((size_t)opt.workers);
    for (pthread_t &t : threads)
        pthread_create(&t, NULL, loader_main, NULL);

    std::vector<double> step_ms, wait_ms, copy_call_ms;
    double wait_total = 0;
    long last_index = -1;
    for (int step = 0; step < opt.steps; step++) {
        const double t0 = now_ms();
        nvtxRangePushA("train_step");
        nvtxRangePushA("next_batch");
        batch *b = ready_q->pop();
        nvtxRangePop();
        const double waited = now_ms() - t0;
        wait_total += waited;
        if (!b)
            break;
        last_index = b->index;
        const double c0 = now_ms();
        CHECK(cudaMemcpyAsync(dev_batch, b->host, batch_bytes, cudaMemcpyHostToDevice, stream));
        copy_call_ms.push_back(now_ms() - c0);
        train_step_kernel<<<1, 128, 0, stream>>>(cycles, dev_batch, batch_bytes, dev_out);
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(stream));
        free_q->push(b);   // the copy is done: the loader may refill it
        nvtxRangePop();
        step_ms.push_back(now_ms() - t0);
        wait_ms.push_back(waited);
    }
    // Steady state: steps after the first, whose wait includes filling the
    // loader pipeline (what a profiler reports apart as warm-up).
    double steady_wait = 0, steady_steps = 0, steady_copy_call = 0;
    for (size_t i = 1; i < step_ms.size(); i++) {
        steady_wait += wait_ms[i];
        steady_steps += step_ms[i];
        steady_copy_call += copy_call_ms[i];
    }
    const double steady_n = step_ms.size() > 1 ? (double)(step_ms.size() - 1) : 1.0;
    const double wall = now_ms() - t_start;
    ready_q->close();
    free_q->close();
    for (pthread_t &t : threads)
        pthread_join(t, NULL);

    // The device holds the last batch: its header must be the batch index.
    long header = -2;
    CHECK(cudaMemcpy(&header, dev_batch, sizeof(header), cudaMemcpyDeviceToHost));
    if (header != last_index) {
        fprintf(stderr, "train_loop: device batch header %ld, expected %ld\n", header, last_index);
        return 1;
    }

    std::vector<double> sorted = step_ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    fprintf(stderr,
            "{\"example\":\"train_loop\",\"device\":\"%s\",\"steps\":%zu,\"workers\":%d,\"pinned\":%d,"
            "\"batch_mb\":%g,\"load_ms\":%g,\"kernel_ms\":%g,\"median_step_ms\":%.3f,"
            "\"batch_wait_ms\":%.3f,\"batch_wait_share\":%.4f,\"steady_wait_share\":%.4f,"
            "\"steady_step_ms\":%.3f,\"steady_copy_call_ms\":%.3f,\"wall_ms\":%.3f}\n",
            prop.name, step_ms.size(), opt.workers, opt.pinned, opt.batch_mb, opt.load_ms,
            opt.kernel_ms, median, wait_total, wall > 0 ? wait_total / wall : 0.0,
            steady_steps > 0 ? steady_wait / steady_steps : 0.0,
            steady_steps / steady_n, steady_copy_call / steady_n, wall);

    for (batch &b : batches) {
        if (opt.pinned)
            cudaFreeHost(b.host);
        else
            free(b.host);
    }
    cudaFree(dev_batch);
    cudaFree(dev_out);
    cudaStreamDestroy(stream);
    if (data_fd >= 0)
        close(data_fd);
    return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_stress.c - KSM under a random load: several processes each map a
 * mergeable area filled from a few patterns (most pages have twins in the
 * same process and in the others; one pattern has more copies than
 * max_page_sharing, a few pages are unique, some are zero) while ksmd
 * scans flat out (sleep_millisecs 0).
 *
 * Each worker keeps a shadow of what every page must hold and runs a
 * seeded random mix of operations for a bounded time: read a page or a
 * range, overwrite a page (copy on write of a KSM page), write one word
 * and put it back, MADV_DONTNEED (the page reads zero) and refill,
 * MADV_UNMERGEABLE and MADV_MERGEABLE of a range, mprotect read-only or
 * read-write, mremap a range away and back, fork a short-lived child that
 * checks and writes its own copies, MADV_PAGEOUT, move_pages to the other
 * NUMA node (half the time with MPOL_MF_MOVE_ALL, which moves KSM pages
 * that other processes map too), and munmap plus mmap of a range. The
 * touched pages are checked against the shadow after every operation,
 * the whole area every 256 operations and at the end. Workers run at
 * nice 10, so that ksmd (nice 5) is never short of CPU. If cgroup2 has
 * the memory controller, one worker runs in a memory cgroup whose
 * memory.reclaim the controller writes every second, so its pages (KSM
 * ones among them) go to swap for real. The controller samples
 * pages_sharing and twice unmerges everything (run=2, then run=1) in the
 * middle of the run.
 *
 * Subtests: no page ever held anything but its shadow; every worker and
 * child exited cleanly with no unexpected syscall failure; pages_sharing
 * was seen above 0 before, between and after the unmerges; each run=2
 * worked and left pages_sharing 0; and once every worker is gone, the
 * page counters all come back to 0 (a bounded wait). The diag line
 * "stress_operations N" gives the number of operations done, the
 * "stress_op" lines each kind's count and time.
 *
 * The seed is printed; -s SEED replays the same sequence of operations
 * (timing, and so ksmd's view, still differs); -x OP,OP,... leaves some
 * kinds of operation out (names as in the "stress_op" lines).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#define NR_WORKERS	5
#define NR_PAGES	384		/* per worker */
#define NR_PATTERNS	12		/* shared patterns */
#define RUN_SECONDS	30		/* guest time the workers run (-t) */
#define MAX_OPS		400000		/* per worker, a cap besides time */
#define VERIFY_ALL_EVERY 256		/* ops between two full checks */
#define MAX_REPORTS	6		/* mismatches described per worker */
#define PAUSE_EVERY	16		/* a worker naps once in so many ops */
#define WORKER_NICE	10		/* ksmd runs at nice 5: let it keep up */

static int run_seconds = RUN_SECONDS;

/* Seeds of page contents: shared patterns, then one unique set a worker. */
#define ZERO_SEED	0		/* the page reads all zero */
#define SHARED_SEED	0x5a00
#define UNIQUE_SEED	0x5b00		/* + worker id (+ 0x80 in a child) */

#define CGROUP_DIR	CGROUP_ROOT "/ksm_stress"
#define MPOL_MF_MOVE	(1 << 1)
#define MPOL_MF_MOVE_ALL (1 << 2)

enum op {
	OP_READ, OP_READ_RANGE, OP_OVERWRITE, OP_WORD, OP_DONTNEED,
	OP_UNMERGE, OP_MERGE, OP_PROTECT, OP_MREMAP, OP_FORK, OP_PAGEOUT,
	OP_MIGRATE, OP_REMAP, NR_OPS
};

static const char *const op_names[NR_OPS] = {
	"read", "read_range", "overwrite", "word_write_restore", "dontneed",
	"unmergeable", "mergeable", "mprotect", "mremap", "fork", "pageout",
	"move_pages", "munmap_mmap",
};

/* Relative frequency of each operation (-x sets some to 0). */
static int op_weight[NR_OPS] = {
	20, 8, 18, 10, 6, 4, 5, 6, 4, 1, 3, 2, 3,
};

/* What a worker tells the controller, in memory shared with it. */
struct result {
	long ops[NR_OPS];
	long skipped[NR_OPS];	/* could not be done: nothing checked */
	double secs[NR_OPS];	/* wall time spent in each */
	long checks;		/* page checks */
	long mismatches;	/* page checks that failed */
	long errors;		/* unexpected syscall failures */
	long forks_failed;	/* children that failed or died */
	int done;
};

/* The content a page must hold. */
struct shadow {
	uint32_t seed;		/* ZERO_SEED, SHARED_SEED + p or unique */
	uint32_t n;		/* for a unique one: fill_pattern()'s n */
	bool ro;		/* mprotect()ed read-only */
};

struct worker {
	int id;
	bool child;		/* a forked child of the worker */
	uint64_t rng;
	long op;		/* operations done */
	const char *doing;	/* name of the current operation */
	char *area;
	uint32_t next_unique;
	struct shadow sh[NR_PAGES];
	struct result *res;
};

static char *patterns;		/* NR_PATTERNS pages of shared content */
static char *zero_page;
static bool two_nodes, use_memcg;
static unsigned long seed;

/* xorshift64*: the workers' random numbers. */
static uint64_t rnd(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545f4914f6cdd1dULL;
}

static size_t rnd_below(struct worker *w, size_t n)
{
	return rnd(w) % n;
}

/* A random range of 1..@max pages inside the area: its first page. */
static size_t rnd_range(struct worker *w, size_t max, size_t *n)
{
	*n = 1 + rnd_below(w, max);
	return rnd_below(w, NR_PAGES - *n + 1);
}

static char *page_at(struct worker *w, size_t i)
{
	return w->area + i * page_size;
}

/*
 * New content: mostly a shared pattern, pattern 0 far more often than the
 * others (so it has more copies than max_page_sharing), some unique
 * pages, some zero pages.
 */
static struct shadow new_content(struct worker *w)
{
	struct shadow s = { 0 };
	size_t r = rnd_below(w, 100);

	if (r < 10) {
		s.seed = ZERO_SEED;
	} else if (r < 25) {
		s.seed = UNIQUE_SEED + w->id + (w->child ? 0x80 : 0);
		s.n = w->next_unique++;
	} else if (r < 50) {
		s.seed = SHARED_SEED;
	} else {
		s.seed = SHARED_SEED + 1 + rnd_below(w, NR_PATTERNS - 1);
	}
	return s;
}

static bool is_shared(uint32_t s)
{
	return s >= SHARED_SEED && s < SHARED_SEED + NR_PATTERNS;
}

static void fill_content(char *p, const struct shadow *s)
{
	if (s->seed == ZERO_SEED)
		memset(p, 0, page_size);
	else if (is_shared(s->seed))
		memcpy(p, patterns + (s->seed - SHARED_SEED) * page_size,
		       page_size);
	else
		fill_pattern(p, s->seed, s->n);
}

static bool holds_content(const char *p, const struct shadow *s)
{
	if (s->seed == ZERO_SEED)
		return !memcmp(p, zero_page, page_size);
	if (is_shared(s->seed))
		return !memcmp(p, patterns + (s->seed - SHARED_SEED) * page_size,
			       page_size);
	return holds_pattern(p, s->seed, s->n);
}

static void describe(char *buf, size_t size, const struct shadow *s)
{
	if (s->seed == ZERO_SEED)
		snprintf(buf, size, "zero");
	else if (is_shared(s->seed))
		snprintf(buf, size, "pattern %u", s->seed - SHARED_SEED);
	else
		snprintf(buf, size, "unique %#x/%u", s->seed, s->n);
}

/* Say what a wrong page holds instead, for the log. */
static void report_mismatch(struct worker *w, const char *p, size_t i)
{
	static uint64_t want[4096 / 8];
	const uint64_t *got = (const void *)p;
	char wants[48], found[64];
	size_t word = 0, words = page_size / 8;

	if (++w->res->mismatches > MAX_REPORTS)
		return;
	describe(wants, sizeof(wants), &w->sh[i]);
	snprintf(found, sizeof(found), "unknown content");
	if (!memcmp(p, zero_page, page_size))
		snprintf(found, sizeof(found), "zero");
	for (int k = 0; k < NR_PATTERNS; k++)
		if (!memcmp(p, patterns + k * page_size, page_size))
			snprintf(found, sizeof(found), "pattern %d", k);
	for (size_t j = 0; j < NR_PAGES; j++)
		if (j != i && holds_content(p, &w->sh[j])) {
			snprintf(found + strlen(found),
				 sizeof(found) - strlen(found),
				 " (that of page %zu)", j);
			break;
		}
	if (page_size <= sizeof(want)) {
		fill_content((char *)want, &w->sh[i]);
		while (word < words && got[word] == want[word])
			word++;
	}
	ktap_diag("worker %d%s: page %zu at %p after %s (op %ld): want %s, found %s; first bad word %zu: %#llx, want %#llx; pfn %#lx",
		  w->id, w->child ? " child" : "", i, p, w->doing, w->op,
		  wants, found, word,
		  (unsigned long long)(word < words ? got[word] : 0),
		  (unsigned long long)(word < words ? want[word] : 0),
		  page_pfn(p));
}

/* Check page @i, found at @p (its place in the area, or where it moved). */
static bool verify_at(struct worker *w, const char *p, size_t i)
{
	w->res->checks++;
	if (holds_content(p, &w->sh[i]))
		return true;
	report_mismatch(w, p, i);
	return false;
}

static bool verify(struct worker *w, size_t first, size_t n)
{
	bool ok = true;

	for (size_t i = first; i < first + n; i++)
		ok &= verify_at(w, page_at(w, i), i);
	return ok;
}

static void error(struct worker *w, const char *what)
{
	if (++w->res->errors <= MAX_REPORTS)
		ktap_diag("worker %d%s: %s (op %ld, %s): %s", w->id,
			  w->child ? " child" : "", what, w->op, w->doing,
			  strerror(errno));
}

/* Make pages [@first, @first + @n) writable if any is read-only. */
static void make_writable(struct worker *w, size_t first, size_t n)
{
	bool ro = false;

	for (size_t i = first; i < first + n; i++)
		ro |= w->sh[i].ro;
	if (!ro)
		return;
	if (mprotect(page_at(w, first), n * page_size,
		     PROT_READ | PROT_WRITE)) {
		error(w, "mprotect rw");
		return;
	}
	for (size_t i = first; i < first + n; i++)
		w->sh[i].ro = false;
}

static void overwrite(struct worker *w, size_t i)
{
	make_writable(w, i, 1);
	w->sh[i] = new_content(w);
	fill_content(page_at(w, i), &w->sh[i]);
}

static void op_word(struct worker *w)
{
	size_t i = rnd_below(w, NR_PAGES), k = rnd_below(w, page_size / 8);
	uint64_t *word, old, new;

	make_writable(w, i, 1);
	word = (uint64_t *)page_at(w, i) + k;
	old = *word;
	new = old ^ (rnd(w) | 1);
	*(volatile uint64_t *)word = new;
	if (*(volatile uint64_t *)word != new) {
		w->res->checks++;
		report_mismatch(w, page_at(w, i), i);
	}
	*(volatile uint64_t *)word = old;
	verify(w, i, 1);
}

static void op_dontneed(struct worker *w)
{
	size_t n, first = rnd_range(w, 4, &n);

	if (madvise(page_at(w, first), n * page_size, MADV_DONTNEED)) {
		error(w, "MADV_DONTNEED");
		return;
	}
	for (size_t i = first; i < first + n; i++)
		w->sh[i].seed = ZERO_SEED;
	verify(w, first, n);
	for (size_t i = first; i < first + n; i++) {
		if (rnd(w) & 1) {
			overwrite(w, i);
			verify(w, i, 1);
		}
	}
}

static void op_advise(struct worker *w, int advice, size_t max)
{
	size_t n, first = rnd_range(w, max, &n);

	if (madvise(page_at(w, first), n * page_size, advice))
		error(w, advice == MADV_MERGEABLE ? "MADV_MERGEABLE" :
		      "MADV_UNMERGEABLE");
	verify(w, first, n);
}

static void op_protect(struct worker *w)
{
	size_t n, first = rnd_range(w, 16, &n);
	bool ro = rnd(w) & 1;

	if (mprotect(page_at(w, first), n * page_size,
		     ro ? PROT_READ : PROT_READ | PROT_WRITE)) {
		error(w, "mprotect");
	} else {
		for (size_t i = first; i < first + n; i++)
			w->sh[i].ro = ro;
	}
	verify(w, first, n);
}

/* Move a range away, check it there (and write a page of it), move it back. */
static void op_mremap(struct worker *w)
{
	size_t n, first = rnd_range(w, 8, &n), j;
	char *src = page_at(w, first), *dst, *moved;

	dst = mmap(NULL, n * page_size, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED) {
		error(w, "mmap for mremap");
		return;
	}
	moved = mremap(src, n * page_size, n * page_size,
		       MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (moved == MAP_FAILED && errno == EFAULT && n > 1) {
		/* The range spans two VMAs: one page is always in one. */
		munmap(dst + page_size, (n - 1) * page_size);
		n = 1;
		moved = mremap(src, page_size, page_size,
			       MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	}
	if (moved == MAP_FAILED) {
		error(w, "mremap away");
		munmap(dst, n * page_size);
		return;
	}
	for (size_t i = 0; i < n; i++)
		verify_at(w, moved + i * page_size, first + i);
	j = rnd_below(w, n);
	if (!w->sh[first + j].ro) {
		w->sh[first + j] = new_content(w);
		fill_content(moved + j * page_size, &w->sh[first + j]);
		verify_at(w, moved + j * page_size, first + j);
	}
	if (mremap(moved, n * page_size, n * page_size,
		   MREMAP_MAYMOVE | MREMAP_FIXED, src) == MAP_FAILED) {
		error(w, "mremap back");
		_exit(4);	/* the area has a hole now: give up */
	}
	verify(w, first, n);
}

/*
 * A child checks a few pages and the pages it is about to write, writes
 * them with new content, checks the whole of its area, and exits; then
 * the parent checks its own copies of those pages.
 */
static void op_fork(struct worker *w)
{
	size_t wr[4], nwr = 1 + rnd_below(w, 4);
	int status;
	pid_t pid;

	for (size_t k = 0; k < nwr; k++)
		wr[k] = rnd_below(w, NR_PAGES);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		error(w, "fork");
		return;
	}
	if (pid == 0) {
		/* The parent waits: the shared result is ours meanwhile. */
		w->child = true;
		w->rng ^= 0x9e3779b97f4a7c15ULL;
		for (int k = 0; k < 8; k++)
			verify(w, rnd_below(w, NR_PAGES), 1);
		for (size_t k = 0; k < nwr; k++) {
			verify(w, wr[k], 1);
			overwrite(w, wr[k]);
			verify(w, wr[k], 1);
		}
		verify(w, 0, NR_PAGES);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		if (++w->res->forks_failed <= MAX_REPORTS)
			ktap_diag("worker %d: child status %#x", w->id, status);
	}
	for (size_t k = 0; k < nwr; k++)
		verify(w, wr[k], 1);
}

static bool op_pageout(struct worker *w)
{
	size_t n, first = rnd_range(w, 32, &n);

	if (madvise(page_at(w, first), n * page_size, MADV_PAGEOUT)) {
		if (errno != EINVAL)
			error(w, "MADV_PAGEOUT");
		return false;
	}
	verify(w, first, n);
	return true;
}

/*
 * Move a few pages, each to the node it is not on; every other time with
 * MPOL_MF_MOVE_ALL, which moves KSM pages mapped by other processes too.
 */
static bool op_migrate(struct worker *w)
{
	size_t n, first = rnd_range(w, 4, &n);
	int nodes[4], status[4], moved = 0;
	void *pages[4];

	if (!two_nodes)
		return false;
	for (size_t i = 0; i < n; i++)
		pages[i] = page_at(w, first + i);
	if (syscall(__NR_move_pages, 0, n, pages, NULL, status, 0) < 0) {
		error(w, "move_pages query");
		return false;
	}
	for (size_t i = 0; i < n; i++)
		nodes[i] = status[i] == 0 ? 1 : 0;
	if (syscall(__NR_move_pages, 0, n, pages, nodes, status,
		    rnd(w) & 1 ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE) < 0 &&
	    errno != ENOENT) {
		error(w, "move_pages");
		return false;
	}
	for (size_t i = 0; i < n; i++)
		moved += status[i] == nodes[i];
	verify(w, first, n);
	return moved > 0;
}

/* Replace a range with a new mapping (mergeable three times in four). */
static void op_remap(struct worker *w)
{
	size_t n, first = rnd_range(w, 8, &n);
	char *p = page_at(w, first);

	if (munmap(p, n * page_size)) {
		error(w, "munmap");
		return;
	}
	if (mmap(p, n * page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p) {
		error(w, "mmap fixed");
		_exit(4);	/* a hole in the area: give up */
	}
	madvise(p, n * page_size, MADV_NOHUGEPAGE);
	if (rnd_below(w, 4) && madvise(p, n * page_size, MADV_MERGEABLE))
		error(w, "MADV_MERGEABLE");
	for (size_t i = first; i < first + n; i++) {
		w->sh[i].ro = false;
		w->sh[i].seed = ZERO_SEED;
		if (rnd_below(w, 8))
			overwrite(w, i);
	}
	verify(w, first, n);
}

static enum op pick_op(struct worker *w)
{
	static int total;
	int r;

	if (!total)
		for (int k = 0; k < NR_OPS; k++)
			total += op_weight[k];
	r = rnd_below(w, total);
	for (int k = 0; k < NR_OPS; k++) {
		if (r < op_weight[k])
			return k;
		r -= op_weight[k];
	}
	return OP_READ;
}

static void do_op(struct worker *w, enum op op)
{
	double t = monotonic_seconds();
	size_t i, n;
	bool done = true;

	w->doing = op_names[op];
	switch (op) {
	case OP_READ:
		verify(w, rnd_below(w, NR_PAGES), 1);
		break;
	case OP_READ_RANGE:
		i = rnd_range(w, 32, &n);
		verify(w, i, n);
		break;
	case OP_OVERWRITE:
		i = rnd_below(w, NR_PAGES);
		overwrite(w, i);
		verify(w, i, 1);
		break;
	case OP_WORD:
		op_word(w);
		break;
	case OP_DONTNEED:
		op_dontneed(w);
		break;
	case OP_UNMERGE:
		op_advise(w, MADV_UNMERGEABLE, 16);
		break;
	case OP_MERGE:
		op_advise(w, MADV_MERGEABLE, 64);
		break;
	case OP_PROTECT:
		op_protect(w);
		break;
	case OP_MREMAP:
		op_mremap(w);
		break;
	case OP_FORK:
		op_fork(w);
		break;
	case OP_PAGEOUT:
		done = op_pageout(w);
		break;
	case OP_MIGRATE:
		done = op_migrate(w);
		break;
	case OP_REMAP:
		op_remap(w);
		break;
	case NR_OPS:
		break;
	}
	w->res->ops[op]++;
	w->res->secs[op] += monotonic_seconds() - t;
	if (!done)
		w->res->skipped[op]++;
	w->op++;
}

/*
 * A worker: set up its area, reply 'r', wait for 'g', run until the time
 * is up, check everything, and exit.
 */
static int worker_main(void *arg, int id, int cmd, int reply)
{
	struct result *res = arg;
	struct worker *w = calloc(1, sizeof(*w));
	double deadline;

	if (!w)
		return 2;
	w->id = id;
	w->res = &res[id];
	w->rng = (seed + 1) * 0x9e3779b97f4a7c15ULL ^
		 (id + 1) * 0xbf58476d1ce4e5b9ULL;
	if (!w->rng)
		w->rng = 1;
	w->doing = "setup";
	if (nice(WORKER_NICE) < 0)
		error(w, "nice");
	/* Before the area is faulted in, so that it is charged there. */
	if (id == 0 && use_memcg && write_file(CGROUP_DIR "/cgroup.procs", "0"))
		ktap_diag("worker 0 could not join " CGROUP_DIR);
	w->area = map_pages(NR_PAGES);
	for (size_t i = 0; i < NR_PAGES; i++) {
		w->sh[i] = new_content(w);
		fill_content(page_at(w, i), &w->sh[i]);
	}
	if (merge_pages(w->area, NR_PAGES))
		error(w, "MADV_MERGEABLE");
	verify(w, 0, NR_PAGES);
	kid_reply(reply, 'r');
	if (kid_wait_cmd(cmd) != 'g')
		return 3;
	deadline = monotonic_seconds() + run_seconds;
	while (w->op < MAX_OPS && monotonic_seconds() < deadline) {
		do_op(w, pick_op(w));
		if (w->op % VERIFY_ALL_EVERY == 0) {
			w->doing = "periodic check";
			verify(w, 0, NR_PAGES);
		}
		/* Vary the timing a little. */
		if (rnd_below(w, PAUSE_EVERY) == 0)
			usleep(2000);
	}
	w->doing = "final check";
	verify(w, 0, NR_PAGES);
	__atomic_store_n(&w->res->done, 1, __ATOMIC_RELEASE);
	return 0;
}

/*
 * A cgroup2 memory cgroup for worker 0; false if unavailable. *@was_on:
 * the root had the memory controller on for its children already.
 */
static bool memcg_setup(bool *was_on)
{
	char buf[256];

	read_file(CGROUP_ROOT "/cgroup.subtree_control", buf, sizeof(buf));
	*was_on = strstr(buf, "memory");
	return !memcg_create(CGROUP_DIR);
}

struct run_stats {
	long max_sharing[3];	/* before, between and after the flips */
	long sharing_after_unmerge[2];
	int unmerge_err[2];
	double unmerge_secs[2];
	long reclaims, reclaim_fails;
	long scans;
	int flips;
	bool timed_out;
};

/* Has worker @i finished, or died? (A dead one is left to kids_wait().) */
static bool worker_over(struct result *res, struct kids *k, int i)
{
	siginfo_t si = { 0 };

	if (__atomic_load_n(&res[i].done, __ATOMIC_ACQUIRE))
		return true;
	return !waitid(P_PID, k->pid[i], &si, WEXITED | WNOHANG | WNOWAIT) &&
	       si.si_pid == k->pid[i];
}

/* The controller, while the workers run: sample, flip run, reclaim. */
static void control(struct result *res, struct kids *k, struct run_stats *st)
{
	double t0 = monotonic_seconds(), next_reclaim = t0 + 1, t;
	double flip_at[2] = { t0 + run_seconds * 0.35, t0 + run_seconds * 0.7 };
	long scans0 = ksm_read("full_scans");
	int flips = 0, done;

	for (;;) {
		long sharing = ksm_read("pages_sharing");

		if (sharing > st->max_sharing[flips])
			st->max_sharing[flips] = sharing;
		done = 0;
		for (int i = 0; i < NR_WORKERS; i++)
			done += worker_over(res, k, i);
		if (done == NR_WORKERS)
			break;
		t = monotonic_seconds();
		if (t > t0 + run_seconds + 60) {
			st->timed_out = true;
			for (int i = 0; i < NR_WORKERS; i++)
				if (!res[i].done && k->pid[i])
					kill(k->pid[i], SIGKILL);
			break;
		}
		if (flips < 2 && t > flip_at[flips]) {
			st->unmerge_err[flips] = ksm_write("run", 2);
			st->sharing_after_unmerge[flips] =
				ksm_read("pages_sharing");
			st->unmerge_secs[flips] = monotonic_seconds() - t;
			ksm_write("run", 1);
			flips++;
		}
		if (use_memcg && t > next_reclaim) {
			if (write_file(CGROUP_DIR "/memory.reclaim", "1M"))
				st->reclaim_fails++;
			else
				st->reclaims++;
			next_reclaim = monotonic_seconds() + 1;
		}
		usleep(20000);
	}
	st->scans = ksm_read("full_scans") - scans0;
	st->flips = flips;
}

/*
 * After every worker is gone: a bounded wait (30 s) for all four page
 * counters to be zero in one snapshot taken with ksmd paused.
 */
static bool counters_settle(void)
{
	double deadline = monotonic_seconds() + 30;
	struct ksm_counts c;

	for (;;) {
		ksm_pause();
		ksm_get_counts(&c);
		ksm_resume();
		if (!c.shared && !c.sharing && !c.unshared && !c.volatile_)
			return true;
		if (monotonic_seconds() > deadline)
			break;
		usleep(20000);
	}
	ksm_diag_rmap_items();
	ktap_diag("counters after the run: shared %ld sharing %ld unshared %ld volatile %ld",
		  c.shared, c.sharing, c.unshared, c.volatile_);
	return false;
}

/* ksmd's CPU time so far in seconds, or -1: is it keeping up? */
static double ksmd_cpu(void)
{
	char path[300], buf[512], *p;
	unsigned long utime, stime;
	struct dirent *d;
	double secs = -1;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		return -1;
	while (secs < 0 && (d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		read_file(path, buf, sizeof(buf));
		p = strrchr(buf, ')');
		if (!strstr(buf, "(ksmd)") || !p)
			continue;
		/* After ")": state and 10 more fields, then utime, stime. */
		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			   &utime, &stime) == 2)
			secs = (double)(utime + stime) / sysconf(_SC_CLK_TCK);
	}
	closedir(dir);
	return secs;
}

/* Idle and busy CPU time of the whole guest so far, in seconds. */
static void cpu_times(double *idle, double *busy)
{
	unsigned long long v[8] = { 0 };
	char buf[512];

	read_file("/proc/stat", buf, sizeof(buf));
	sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
	       &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	*idle = (double)(v[3] + v[4]) / sysconf(_SC_CLK_TCK);
	*busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
		sysconf(_SC_CLK_TCK);
}

static bool some_sharing(void *arg)
{
	return ksm_read("pages_sharing") > 0;
}

static char excluded[256];

/*
 * -s SEED: replay a run; -x OP,OP...: leave those operations out;
 * -t SECONDS: run that long (a soak; make test SOAK=SECONDS).
 */
static int parse_args(int argc, char **argv)
{
	char *name;
	int c, o;

	while ((c = getopt(argc, argv, "s:t:x:")) != -1) {
		switch (c) {
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		case 't':
			run_seconds = atoi(optarg);
			if (run_seconds <= 0) {
				fprintf(stderr, "-t: seconds, more than 0\n");
				return -1;
			}
			break;
		case 'x':
			snprintf(excluded, sizeof(excluded), "%s", optarg);
			for (name = strtok(optarg, ","); name;
			     name = strtok(NULL, ",")) {
				for (o = 0; o < NR_OPS; o++)
					if (!strcmp(name, op_names[o]))
						break;
				if (o == NR_OPS || o == OP_READ) {
					fprintf(stderr, "-x: no operation %s\n",
						name);
					return -1;
				}
				op_weight[o] = 0;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-s seed] [-t seconds] [-x op,...]\n",
				argv[0]);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {
		"stress_no_mismatch", "stress_workers_ok",
		"stress_merged_during_run", "stress_unmerge_mid_run",
		"stress_counters_settle",
	};
	struct run_stats st = { 0 };
	long total = 0, checks = 0, bad = 0, errors = 0, forks_failed = 0;
	long skipped[NR_OPS] = { 0 }, ops[NR_OPS] = { 0 }, swapped, cows;
	double secs[NR_OPS] = { 0 };
	double t_run, ksmd_run, idle0, busy0, idle, busy;
	struct rusage ru;
	struct result *res;
	bool workers_ok, merged_initially, setup_ok, memcg_was_on;
	struct kids k;

	seed = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
	if (parse_args(argc, argv))
		return 2;
	ktap_plan(ARRAY_SIZE(names));
	if (ksm_read("run") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no /sys/kernel/mm/ksm");
	ksm_save_settings();
	ktap_diag("seed %lu (rerun with: ksm_stress -s %lu%s%s)", seed, seed,
		  excluded[0] ? " -x " : "", excluded);

	patterns = aligned_alloc(page_size, NR_PATTERNS * page_size);
	zero_page = aligned_alloc(page_size, page_size);
	res = mmap(NULL, NR_WORKERS * sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!patterns || !zero_page || res == MAP_FAILED) {
		perror("memory");
		return 2;
	}
	for (int p = 0; p < NR_PATTERNS; p++)
		fill_pattern(patterns + p * page_size, SHARED_SEED + p, 0);
	memset(zero_page, 0, page_size);
	memset(res, 0, NR_WORKERS * sizeof(*res));
	two_nodes = !access("/sys/devices/system/node/node1", F_OK);
	use_memcg = memcg_setup(&memcg_was_on);
	ktap_diag("%d workers x %d pages, %d s; two nodes: %s; memcg reclaim: %s",
		  NR_WORKERS, NR_PAGES, run_seconds, two_nodes ? "yes" : "no",
		  use_memcg ? "yes" : "no");

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("sleep_millisecs", 0) == 0, "sleep_millisecs");
	CHECK(ksm_write("pages_to_scan", 1000) == 0, "pages_to_scan");
	swapped = vmstat("pswpout");
	cows = vmstat("cow_ksm");

	CHECK(kids_start(&k, NR_WORKERS, worker_main, res) == 0, "fork");
	CHECK(kids_collect(&k, NULL), "workers ready");
	merged_initially = ksm_wait_until(some_sharing, NULL, 10);
	CHECK(kids_send(&k, 'g'), "go");
	setup_ok = checks_passed();
	t_run = monotonic_seconds();
	ksmd_run = ksmd_cpu();
	cpu_times(&idle0, &busy0);
	control(res, &k, &st);
	t_run = monotonic_seconds() - t_run;
	ksmd_run = ksmd_cpu() - ksmd_run;
	cpu_times(&idle, &busy);
	workers_ok = kids_wait(&k) && !st.timed_out;
	getrusage(RUSAGE_CHILDREN, &ru);

	for (int i = 0; i < NR_WORKERS; i++) {
		for (int o = 0; o < NR_OPS; o++) {
			ops[o] += res[i].ops[o];
			skipped[o] += res[i].skipped[o];
			secs[o] += res[i].secs[o];
			total += res[i].ops[o];
		}
		checks += res[i].checks;
		bad += res[i].mismatches;
		errors += res[i].errors;
		forks_failed += res[i].forks_failed;
		if (!res[i].done)
			ktap_diag("worker %d did not finish", i);
	}
	ktap_diag("stress_operations %ld", total);
	for (int o = 0; o < NR_OPS; o++)
		ktap_diag("stress_op %s %ld (not done %ld, %.1f s)",
			  op_names[o], ops[o], skipped[o], secs[o]);
	ktap_diag("page checks %ld, mismatches %ld, syscall errors %ld, failed children %ld",
		  checks, bad, errors, forks_failed);
	ktap_diag("full scans during the run %ld; max pages_sharing %ld / %ld / %ld (before / between / after the unmerges)",
		  st.scans, st.max_sharing[0], st.max_sharing[1],
		  st.max_sharing[2]);
	ktap_diag("run %.1f s: CPU busy %.1f s, idle %.1f s; ksmd %.1f s, workers %.1f s user %.1f s sys; cow_ksm +%ld",
		  t_run, busy - busy0, idle - idle0, ksmd_run,
		  ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		  ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
		  vmstat("cow_ksm") - cows);
	for (int f = 0; f < 2; f++)
		ktap_diag("run=2 #%d: %d, pages_sharing then %ld, %.2f s",
			  f + 1, st.unmerge_err[f],
			  st.sharing_after_unmerge[f], st.unmerge_secs[f]);
	if (use_memcg)
		ktap_diag("memory.reclaim: %ld done, %ld short; pswpout +%ld",
			  st.reclaims, st.reclaim_fails,
			  vmstat("pswpout") - swapped);

	CHECK(bad == 0, "%ld mismatches", bad);
	CHECK(checks > 0, "no page checked");
	ktap_result(checks_passed(), "%s", names[0]);

	CHECK(setup_ok, "setup failed");
	CHECK(workers_ok, "a worker failed or timed out");
	CHECK(errors == 0, "%ld syscall errors", errors);
	CHECK(forks_failed == 0, "%ld children failed", forks_failed);
	ktap_result(checks_passed(), "%s", names[1]);

	for (int f = 0; f < 3; f++)
		CHECK(st.max_sharing[f] > 0, "no pages_sharing in phase %d", f);
	CHECK(merged_initially, "nothing merged before the run");
	ktap_result(checks_passed(), "%s", names[2]);

	CHECK(st.flips == 2, "%d unmerges during the run", st.flips);
	for (int f = 0; f < 2; f++) {
		CHECK(st.unmerge_err[f] == 0, "run=2: %d", st.unmerge_err[f]);
		CHECK(st.sharing_after_unmerge[f] == 0,
		      "pages_sharing %ld after run=2",
		      st.sharing_after_unmerge[f]);
	}
	ktap_result(checks_passed(), "%s", names[3]);

	ktap_result(counters_settle(), "%s", names[4]);
	if (use_memcg) {
		rmdir(CGROUP_DIR);
		if (!memcg_was_on)
			write_file(CGROUP_ROOT "/cgroup.subtree_control",
				   "-memory");
	}
	return ktap_finish();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ksmtop - a live view of KSM (kernel samepage merging)
 *
 * Every interval it reads /sys/kernel/mm/ksm, ksmd's CPU time from
 * /proc/<ksmd>/stat and every process's /proc/PID/ksm_stat, and shows
 * ksmd's settings and progress (scan rate, CPU, full-scan time), the
 * memory KSM saves with its trend over the last minute, the processes with
 * the most merged pages and, with cgroup v2, the same figures per cgroup.
 * It needs nothing but libc, and a file the kernel lacks is shown as "-"
 * (JSON null) rather than an error, so it runs on any KSM kernel.
 *
 * Build: make -C tools/mm ksmtop
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KSM_SYSFS	"/sys/kernel/mm/ksm"
#define CGROUP2_ROOT	"/sys/fs/cgroup"
#define TREND_LEN	60	/* samples kept for the trend */
#define NA		LLONG_MIN	/* a value that could not be read */

/*
 * The numeric files of /sys/kernel/mm/ksm that ksmtop reads, in the order
 * it reads them: the counters of the rates first, right after ksmd's CPU.
 */
enum field {
	F_PAGES_SCANNED,
	F_FULL_SCANS,
	F_RUN,
	F_PAGES_TO_SCAN,
	F_SLEEP_MILLISECS,
	F_MAX_PAGE_SHARING,
	F_MERGE_ACROSS_NODES,
	F_USE_ZERO_PAGES,
	F_SMART_SCAN,
	F_PAGES_SHARED,
	F_PAGES_SHARING,
	F_PAGES_UNSHARED,
	F_PAGES_VOLATILE,
	F_PAGES_SKIPPED,
	F_KSM_ZERO_PAGES,
	F_GENERAL_PROFIT,
	F_STABLE_NODE_CHAINS,
	F_STABLE_NODE_DUPS,
	F_MAX_KERNEL_PAGES,
	F_KERNEL_PAGES_ALLOCATED,
	F_MERGE_ALL,
	F_ZERO_PAGES_ONLY,
	F_ESTIMATE,
	F_ESTIMATED_PAGES_SHARING,
	F_ESTIMATED_ZERO_PAGES,
	F_PRESSURE_ONLY,
	F_PRESSURE_LEVEL,
	NR_FIELDS
};

static const char * const field_name[NR_FIELDS] = {
	[F_PAGES_SCANNED] = "pages_scanned",
	[F_FULL_SCANS] = "full_scans",
	[F_RUN] = "run",
	[F_PAGES_TO_SCAN] = "pages_to_scan",
	[F_SLEEP_MILLISECS] = "sleep_millisecs",
	[F_MAX_PAGE_SHARING] = "max_page_sharing",
	[F_MERGE_ACROSS_NODES] = "merge_across_nodes",
	[F_USE_ZERO_PAGES] = "use_zero_pages",
	[F_SMART_SCAN] = "smart_scan",
	[F_PAGES_SHARED] = "pages_shared",
	[F_PAGES_SHARING] = "pages_sharing",
	[F_PAGES_UNSHARED] = "pages_unshared",
	[F_PAGES_VOLATILE] = "pages_volatile",
	[F_PAGES_SKIPPED] = "pages_skipped",
	[F_KSM_ZERO_PAGES] = "ksm_zero_pages",
	[F_GENERAL_PROFIT] = "general_profit",
	[F_STABLE_NODE_CHAINS] = "stable_node_chains",
	[F_STABLE_NODE_DUPS] = "stable_node_dups",
	[F_MAX_KERNEL_PAGES] = "max_kernel_pages",
	[F_KERNEL_PAGES_ALLOCATED] = "kernel_pages_allocated",
	[F_MERGE_ALL] = "merge_all",
	[F_ZERO_PAGES_ONLY] = "zero_pages_only",
	[F_ESTIMATE] = "estimate",
	[F_ESTIMATED_PAGES_SHARING] = "estimated_pages_sharing",
	[F_ESTIMATED_ZERO_PAGES] = "estimated_zero_pages",
	[F_PRESSURE_ONLY] = "pressure_only",
	[F_PRESSURE_LEVEL] = "pressure_level",
};

/* KSM's figures of one process, or their sums over one cgroup. */
struct figures {
	long long merging_pages;
	long long rmap_items;
	long long zero_pages;
	long long profit;
};

struct proc {
	int pid;
	char comm[32];
	char cgroup[256];
	struct figures f;
};

struct group {
	const char *path;
	int procs;
	struct figures f;
	char ksm[16];			/* memory.ksm; "" if absent */
};

struct sample {
	double t;			/* CLOCK_MONOTONIC seconds */
	long long v[NR_FIELDS];
	char advisor_mode[32];		/* "" if the file is absent */
	int ksmd_pid;			/* -1 if not found */
	long long ksmd_ticks;		/* utime + stime, NA if unknown */
	struct proc *procs;
	size_t nprocs;
	size_t cap;
	struct group *groups;
	size_t ngroups;
	bool cgroup2;
};

/* What two samples tell: NaN where it is not known yet. */
struct rates {
	double cpu_pct;			/* ksmd, % of one CPU */
	double scan_rate;		/* pages_scanned per second */
	double full_scan_seconds;	/* time of one full scan, observed */
};

struct trend {
	double saved[TREND_LEN];
	double rate[TREND_LEN];
	double cpu[TREND_LEN];
	int n;				/* samples held */
	int head;			/* next slot */
};

static const char *ksm_dir = KSM_SYSFS;
static long page_size;
static long clk_tck;
static bool stop;
static sigset_t stop_signals;	/* blocked: sleep_until() waits for them */

static double monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Copy @src into @dst of @size bytes, cut short if need be. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* @path's first line, without its newline, into @buf; false on error. */
static bool read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, size, f);
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static long long read_number(const char *path)
{
	char buf[64], *end;
	long long v;

	if (!read_line(path, buf, sizeof(buf)))
		return NA;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || end == buf)
		return NA;
	return v;
}

/* advisor_mode reads "[none] scan-time": the word in brackets. */
static void read_advisor_mode(char *buf, size_t size)
{
	char path[PATH_MAX], line[128], *open, *close;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/advisor_mode", ksm_dir);
	if (!read_line(path, line, sizeof(line)))
		return;
	open = strchr(line, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!open || !close)
		return;
	*close = '\0';
	copy_str(buf, size, open + 1);
}

static bool is_pid(const char *name)
{
	if (!*name)
		return false;
	for (; *name; name++)
		if (!isdigit((unsigned char)*name))
			return false;
	return true;
}

static int find_ksmd(void)
{
	char path[PATH_MAX], comm[32];
	struct dirent *d;
	int pid = -1;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		return -1;
	while (pid < 0 && (d = readdir(dir))) {
		if (!is_pid(d->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		if (read_line(path, comm, sizeof(comm)) &&
		    !strcmp(comm, "ksmd"))
			pid = atoi(d->d_name);
	}
	closedir(dir);
	return pid;
}

/* utime + stime of @pid (fields 14 and 15 of its stat), in clock ticks. */
static long long cpu_ticks(int pid)
{
	unsigned long long utime, stime;
	char path[64], buf[512], *p;

	if (pid < 0)
		return NA;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!read_line(path, buf, sizeof(buf)))
		return NA;
	/* The comm may hold spaces and parentheses: go past its last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &utime, &stime) != 2)
		return NA;
	return utime + stime;
}

/* The "0::" line of /proc/PID/cgroup: the process's cgroup v2 path. */
static void read_cgroup(int pid, char *buf, size_t size)
{
	char path[64], line[512];
	FILE *f;

	snprintf(buf, size, "-");
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		copy_str(buf, size, line + 3);
		break;
	}
	fclose(f);
}

/*
 * KSM's figures of process @pid from /proc/PID/ksm_stat and
 * /proc/PID/ksm_merging_pages; false if it has none (a kernel thread, a
 * process gone meanwhile, or one KSM never looked at).
 */
static bool read_proc_figures(int pid, struct figures *f)
{
	char path[64], line[128], key[64];
	long long v;
	FILE *file;

	*f = (struct figures){ NA, NA, NA, NA };
	snprintf(path, sizeof(path), "/proc/%d/ksm_stat", pid);
	file = fopen(path, "r");
	if (!file)
		return false;
	while (fgets(line, sizeof(line), file)) {
		if (sscanf(line, "%63s %lld", key, &v) != 2)
			continue;
		if (!strcmp(key, "ksm_rmap_items"))
			f->rmap_items = v;
		else if (!strcmp(key, "ksm_zero_pages"))
			f->zero_pages = v;
		else if (!strcmp(key, "ksm_merging_pages"))
			f->merging_pages = v;
		else if (!strcmp(key, "ksm_process_profit"))
			f->profit = v;
	}
	fclose(file);
	snprintf(path, sizeof(path), "/proc/%d/ksm_merging_pages", pid);
	v = read_number(path);
	if (v != NA)
		f->merging_pages = v;
	return f->merging_pages > 0 || f->rmap_items > 0 || f->zero_pages > 0;
}

static void add_figure(long long *sum, long long v)
{
	if (v == NA)
		return;
	*sum = *sum == NA ? v : *sum + v;
}

static int by_figures(const void *a, const void *b)
{
	const struct figures *x = a, *y = b;

	if (x->merging_pages != y->merging_pages)
		return x->merging_pages < y->merging_pages ? 1 : -1;
	if (x->zero_pages != y->zero_pages)
		return x->zero_pages < y->zero_pages ? 1 : -1;
	if (x->rmap_items != y->rmap_items)
		return x->rmap_items < y->rmap_items ? 1 : -1;
	return 0;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;
	int c = by_figures(&x->f, &y->f);

	return c ? c : x->pid - y->pid;
}

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	int c = by_figures(&x->f, &y->f);

	return c ? c : strcmp(x->path, y->path);
}

static void scan_procs(struct sample *s)
{
	char path[64];
	struct dirent *d;
	struct proc *p;
	DIR *dir;

	s->nprocs = 0;
	dir = opendir("/proc");
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (!is_pid(d->d_name))
			continue;
		if (s->nprocs == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 64;
			struct proc *procs;

			procs = realloc(s->procs, cap * sizeof(*procs));
			if (!procs)
				break;
			s->procs = procs;
			s->cap = cap;
		}
		p = &s->procs[s->nprocs];
		p->pid = atoi(d->d_name);
		if (!read_proc_figures(p->pid, &p->f))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/comm", p->pid);
		if (!read_line(path, p->comm, sizeof(p->comm)))
			snprintf(p->comm, sizeof(p->comm), "?");
		read_cgroup(p->pid, p->cgroup, sizeof(p->cgroup));
		s->nprocs++;
	}
	closedir(dir);
	qsort(s->procs, s->nprocs, sizeof(*s->procs), proc_cmp);
}

/* The cgroup's memory.ksm: whether its processes all merge. */
static void read_memory_ksm(struct group *g)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s/memory.ksm", CGROUP2_ROOT,
		 g->path);
	if (!read_line(path, g->ksm, sizeof(g->ksm)))
		g->ksm[0] = '\0';
}

/* Sum the processes' figures per cgroup v2 path. */
static void sum_groups(struct sample *s)
{
	size_t i, j;

	free(s->groups);
	s->groups = NULL;
	s->ngroups = 0;
	if (!s->cgroup2 || !s->nprocs)
		return;
	s->groups = calloc(s->nprocs, sizeof(*s->groups));
	if (!s->groups)
		return;
	for (i = 0; i < s->nprocs; i++) {
		const struct proc *p = &s->procs[i];
		struct group *g = NULL;

		for (j = 0; j < s->ngroups && !g; j++)
			if (!strcmp(s->groups[j].path, p->cgroup))
				g = &s->groups[j];
		if (!g) {
			g = &s->groups[s->ngroups++];
			g->path = p->cgroup;
			g->f = (struct figures){ NA, NA, NA, NA };
			read_memory_ksm(g);
		}
		g->procs++;
		add_figure(&g->f.merging_pages, p->f.merging_pages);
		add_figure(&g->f.rmap_items, p->f.rmap_items);
		add_figure(&g->f.zero_pages, p->f.zero_pages);
		add_figure(&g->f.profit, p->f.profit);
	}
	qsort(s->groups, s->ngroups, sizeof(*s->groups), group_cmp);
}

static void take_sample(struct sample *s, int ksmd_pid)
{
	char path[PATH_MAX];
	int i;

	/* The time, ksmd's CPU and pages_scanned close together: rates. */
	s->t = monotonic();
	s->ksmd_pid = ksmd_pid;
	s->ksmd_ticks = cpu_ticks(ksmd_pid);
	if (s->ksmd_ticks == NA) {
		s->ksmd_pid = find_ksmd();
		s->t = monotonic();
		s->ksmd_ticks = cpu_ticks(s->ksmd_pid);
	}
	for (i = 0; i < NR_FIELDS; i++) {
		snprintf(path, sizeof(path), "%s/%s", ksm_dir, field_name[i]);
		s->v[i] = read_number(path);
	}
	read_advisor_mode(s->advisor_mode, sizeof(s->advisor_mode));
	s->cgroup2 = !access(CGROUP2_ROOT "/cgroup.controllers", F_OK);
	scan_procs(s);
	sum_groups(s);
}

/* Memory saved: (pages_sharing + ksm_zero_pages) pages, in bytes. */
static long long saved_bytes(const struct sample *s)
{
	long long pages = s->v[F_PAGES_SHARING];

	if (pages == NA)
		return NA;
	if (s->v[F_KSM_ZERO_PAGES] != NA)
		pages += s->v[F_KSM_ZERO_PAGES];
	return pages * page_size;
}

/*
 * Full-scan time: the time between two increments of full_scans that
 * ksmtop saw, over the number of scans between them. The first increment
 * seen only starts the clock; run=2 (full_scans back to 0) restarts it.
 */
struct scan_clock {
	double t;
	long long scans;	/* NA until an increment is seen */
	double seconds;		/* NaN until two are */
};

static void update_rates(struct rates *r, struct scan_clock *c,
			 const struct sample *a, const struct sample *b)
{
	long long scans = b->v[F_FULL_SCANS];
	double dt = b->t - a->t;

	r->cpu_pct = NAN;
	r->scan_rate = NAN;
	if (dt > 0 && a->ksmd_pid == b->ksmd_pid &&
	    a->ksmd_ticks != NA && b->ksmd_ticks != NA)
		r->cpu_pct = 100.0 * (b->ksmd_ticks - a->ksmd_ticks) /
			     clk_tck / dt;
	if (dt > 0 && a->v[F_PAGES_SCANNED] != NA &&
	    b->v[F_PAGES_SCANNED] >= a->v[F_PAGES_SCANNED])
		r->scan_rate = (b->v[F_PAGES_SCANNED] -
				a->v[F_PAGES_SCANNED]) / dt;
	if (scans == NA || a->v[F_FULL_SCANS] == NA ||
	    scans < a->v[F_FULL_SCANS]) {
		c->scans = NA;
		c->seconds = NAN;
	} else if (scans > a->v[F_FULL_SCANS]) {
		if (c->scans != NA && scans > c->scans)
			c->seconds = (b->t - c->t) / (scans - c->scans);
		c->t = b->t;
		c->scans = scans;
	}
	r->full_scan_seconds = c->seconds;
}

static void trend_add(struct trend *tr, const struct sample *s,
		      const struct rates *r)
{
	long long saved = saved_bytes(s);

	tr->saved[tr->head] = saved == NA ? NAN : (double)saved;
	tr->rate[tr->head] = r->scan_rate;
	tr->cpu[tr->head] = r->cpu_pct;
	tr->head = (tr->head + 1) % TREND_LEN;
	if (tr->n < TREND_LEN)
		tr->n++;
}

/* The i-th oldest value of @ring in @tr. */
static double trend_at(const struct trend *tr, const double *ring, int i)
{
	return ring[(tr->head - tr->n + i + TREND_LEN) % TREND_LEN];
}

struct span {
	double min, max, first, last;
	int n;
};

static struct span trend_span(const struct trend *tr, const double *ring)
{
	struct span sp = { NAN, NAN, NAN, NAN, 0 };
	int i;

	for (i = 0; i < tr->n; i++) {
		double v = trend_at(tr, ring, i);

		if (isnan(v))
			continue;
		if (!sp.n++) {
			sp.min = v;
			sp.max = v;
			sp.first = v;
		}
		if (v < sp.min)
			sp.min = v;
		if (v > sp.max)
			sp.max = v;
		sp.last = v;
	}
	return sp;
}

/* Text output */

static const char *num(char *buf, size_t size, long long v)
{
	if (v == NA)
		return "-";
	snprintf(buf, size, "%lld", v);
	return buf;
}

static const char *bytes(char *buf, size_t size, double v)
{
	static const char * const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double a = v < 0 ? -v : v;
	int u = 0;

	if (isnan(v))
		return "-";
	while (a >= 1024 && u < 4) {
		a /= 1024;
		v /= 1024;
		u++;
	}
	if (u)
		snprintf(buf, size, "%.1f %s", v, unit[u]);
	else
		snprintf(buf, size, "%.0f B", v);
	return buf;
}

static const char *fixed(char *buf, size_t size, double v, int decimals)
{
	if (isnan(v))
		return "-";
	snprintf(buf, size, "%.*f", decimals, v);
	return buf;
}

/* One character per sample, from ' ' (the minute's lowest) to '@'. */
static void sparkline(const struct trend *tr, const double *ring)
{
	static const char level[] = " .:-=+*#%@";
	struct span sp = trend_span(tr, ring);
	int i;

	for (i = 0; i < TREND_LEN - tr->n; i++)
		putchar(' ');
	for (i = 0; i < tr->n; i++) {
		double v = trend_at(tr, ring, i);
		int l = 0;

		if (isnan(v)) {
			putchar('?');
			continue;
		}
		if (sp.max > sp.min)
			l = (int)((v - sp.min) / (sp.max - sp.min) * 9 + 0.5);
		putchar(level[l]);
	}
}

static void print_trend_line(const char *name, const struct trend *tr,
			     const double *ring, bool as_bytes)
{
	struct span sp = trend_span(tr, ring);
	char a[32], b[32], c[32];

	printf("  %-6s |", name);
	sparkline(tr, ring);
	if (as_bytes)
		printf("| %s .. %s, change %s\n",
		       bytes(a, sizeof(a), sp.min), bytes(b, sizeof(b), sp.max),
		       bytes(c, sizeof(c), sp.last - sp.first));
	else
		printf("| %s .. %s\n", fixed(a, sizeof(a), sp.min, 1),
		       fixed(b, sizeof(b), sp.max, 1));
}

static void print_text(const struct sample *s, const struct rates *r,
		       const struct trend *tr, double interval, int top)
{
	char a[32], b[32], c[32], d[32];
	const long long *v = s->v;
	time_t wall = time(NULL);
	char clock[16];
	size_t i;

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&wall));
	printf("ksmtop - KSM at %s, every %.1f s, page size %ld\n\n",
	       clock, interval, page_size);
	printf("ksmd      pid %s  cpu %s%%  run %s\n",
	       num(a, sizeof(a), s->ksmd_pid < 0 ? NA : s->ksmd_pid),
	       fixed(b, sizeof(b), r->cpu_pct, 1),
	       num(c, sizeof(c), v[F_RUN]));
	printf("settings  pages_to_scan %s  sleep_millisecs %s  max_page_sharing %s\n",
	       num(a, sizeof(a), v[F_PAGES_TO_SCAN]),
	       num(b, sizeof(b), v[F_SLEEP_MILLISECS]),
	       num(c, sizeof(c), v[F_MAX_PAGE_SHARING]));
	printf("          merge_across_nodes %s  use_zero_pages %s  smart_scan %s",
	       num(a, sizeof(a), v[F_MERGE_ACROSS_NODES]),
	       num(b, sizeof(b), v[F_USE_ZERO_PAGES]),
	       num(c, sizeof(c), v[F_SMART_SCAN]));
	printf("  advisor_mode %s\n",
	       s->advisor_mode[0] ? s->advisor_mode : "-");
	printf("scan      %s pages/s  full_scans %s  full scan %s s  pages_scanned %s\n",
	       fixed(a, sizeof(a), r->scan_rate, 0),
	       num(b, sizeof(b), v[F_FULL_SCANS]),
	       fixed(c, sizeof(c), r->full_scan_seconds, 1),
	       num(d, sizeof(d), v[F_PAGES_SCANNED]));
	printf("pages     pages_shared %s  pages_sharing %s",
	       num(a, sizeof(a), v[F_PAGES_SHARED]),
	       num(b, sizeof(b), v[F_PAGES_SHARING]));
	printf("  pages_unshared %s  pages_volatile %s\n",
	       num(c, sizeof(c), v[F_PAGES_UNSHARED]),
	       num(d, sizeof(d), v[F_PAGES_VOLATILE]));
	printf("          ksm_zero_pages %s  max_kernel_pages %s  merge_all %s",
	       num(a, sizeof(a), v[F_KSM_ZERO_PAGES]),
	       num(b, sizeof(b), v[F_MAX_KERNEL_PAGES]),
	       num(c, sizeof(c), v[F_MERGE_ALL]));
	printf("  zero_pages_only %s\n",
	       num(a, sizeof(a), v[F_ZERO_PAGES_ONLY]));
	printf("modes     estimate %s  estimated_pages_sharing %s  estimated_zero_pages %s\n",
	       num(a, sizeof(a), v[F_ESTIMATE]),
	       num(b, sizeof(b), v[F_ESTIMATED_PAGES_SHARING]),
	       num(c, sizeof(c), v[F_ESTIMATED_ZERO_PAGES]));
	printf("          pressure_only %s  pressure_level %s\n",
	       num(a, sizeof(a), v[F_PRESSURE_ONLY]),
	       num(b, sizeof(b), v[F_PRESSURE_LEVEL]));
	printf("saved     %s  saved_bytes %s  general_profit %s\n",
	       bytes(a, sizeof(a), saved_bytes(s) == NA ? NAN :
		     (double)saved_bytes(s)),
	       num(b, sizeof(b), saved_bytes(s)),
	       num(c, sizeof(c), v[F_GENERAL_PROFIT]));
	printf("\nlast %d s (%d samples, oldest left)\n",
	       (int)(tr->n * interval + 0.5), tr->n);
	print_trend_line("saved", tr, tr->saved, true);
	print_trend_line("scan/s", tr, tr->rate, false);
	print_trend_line("cpu %", tr, tr->cpu, false);

	printf("\n%7s  %-16s %10s %10s %10s %12s  %s\n", "PID", "COMM",
	       "MERGING", "ZERO", "RMAP_ITEMS", "PROFIT", "CGROUP");
	for (i = 0; i < s->nprocs && i < (size_t)top; i++) {
		const struct proc *p = &s->procs[i];

		printf("%7d  %-16s %10s %10s %10s %12s  %s\n", p->pid, p->comm,
		       num(a, sizeof(a), p->f.merging_pages),
		       num(b, sizeof(b), p->f.zero_pages),
		       num(c, sizeof(c), p->f.rmap_items),
		       num(d, sizeof(d), p->f.profit), p->cgroup);
	}
	if (!s->nprocs)
		printf("%7s  (no process has pages KSM tracks)\n", "");
	if (!s->cgroup2)
		return;
	printf("\n%7s  %-27s %10s %10s %12s  %s\n", "PROCS", "CGROUP",
	       "MERGING", "ZERO", "PROFIT", "MEMORY.KSM");
	for (i = 0; i < s->ngroups && i < (size_t)top; i++) {
		const struct group *g = &s->groups[i];

		printf("%7d  %-27s %10s %10s %12s  %s\n", g->procs, g->path,
		       num(a, sizeof(a), g->f.merging_pages),
		       num(b, sizeof(b), g->f.zero_pages),
		       num(c, sizeof(c), g->f.profit),
		       g->ksm[0] ? g->ksm : "-");
	}
}

/* JSON output: one object a line, missing values as null. */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void json_int(const char *key, long long v)
{
	if (v == NA)
		printf("\"%s\":null,", key);
	else
		printf("\"%s\":%lld,", key, v);
}

static void json_real(const char *key, double v)
{
	if (isnan(v))
		printf("\"%s\":null,", key);
	else
		printf("\"%s\":%.6f,", key, v);
}

static void json_figures(const struct figures *f)
{
	json_int("ksm_merging_pages", f->merging_pages);
	json_int("ksm_rmap_items", f->rmap_items);
	json_int("ksm_zero_pages", f->zero_pages);
	printf("\"ksm_process_profit\":");
	if (f->profit == NA)
		printf("null");
	else
		printf("%lld", f->profit);
}

static void print_json(const struct sample *s, const struct rates *r,
		       const struct trend *tr, double interval, int top)
{
	struct span saved = trend_span(tr, tr->saved);
	struct span rate = trend_span(tr, tr->rate);
	struct span cpu = trend_span(tr, tr->cpu);
	struct timespec now;
	size_t i;
	int f;

	clock_gettime(CLOCK_REALTIME, &now);
	printf("{\"time\":%.3f,\"uptime\":%.3f,\"interval\":%.3f,",
	       now.tv_sec + now.tv_nsec / 1e9, s->t, interval);
	json_int("page_size", page_size);
	json_int("ksmd_pid", s->ksmd_pid < 0 ? NA : s->ksmd_pid);
	json_real("ksmd_cpu_seconds", s->ksmd_ticks == NA ? NAN :
		  (double)s->ksmd_ticks / clk_tck);
	json_real("ksmd_cpu_pct", r->cpu_pct);
	json_real("scan_rate", r->scan_rate);
	json_real("full_scan_seconds", r->full_scan_seconds);
	for (f = 0; f < NR_FIELDS; f++)
		json_int(field_name[f], s->v[f]);
	printf("\"advisor_mode\":");
	if (s->advisor_mode[0])
		json_string(s->advisor_mode);
	else
		printf("null");
	printf(",");
	json_int("saved_bytes", saved_bytes(s));
	/* The trend: the last TREND_LEN snapshots, oldest first. */
	json_int("trend_samples", tr->n);
	json_real("trend_seconds", tr->n * interval);
	json_real("saved_bytes_min_trend", saved.min);
	json_real("saved_bytes_max_trend", saved.max);
	json_real("saved_bytes_change_trend", saved.last - saved.first);
	json_real("scan_rate_min_trend", rate.min);
	json_real("scan_rate_max_trend", rate.max);
	json_real("ksmd_cpu_pct_min_trend", cpu.min);
	json_real("ksmd_cpu_pct_max_trend", cpu.max);
	json_int("processes_total", s->nprocs);
	printf("\"processes\":[");
	for (i = 0; i < s->nprocs && i < (size_t)top; i++) {
		const struct proc *p = &s->procs[i];

		printf("%s{\"pid\":%d,\"comm\":", i ? "," : "", p->pid);
		json_string(p->comm);
		printf(",\"cgroup\":");
		json_string(p->cgroup);
		printf(",");
		json_figures(&p->f);
		printf("}");
	}
	printf("],\"cgroups\":");
	if (!s->cgroup2) {
		printf("null}\n");
		return;
	}
	printf("[");
	for (i = 0; i < s->ngroups && i < (size_t)top; i++) {
		const struct group *g = &s->groups[i];

		printf("%s{\"cgroup\":", i ? "," : "");
		json_string(g->path);
		printf(",\"procs\":%d,\"memory_ksm\":", g->procs);
		if (g->ksm[0])
			json_string(g->ksm);
		else
			printf("null");
		printf(",");
		json_figures(&g->f);
		printf("}");
	}
	printf("]}\n");
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ksmtop [-d SECONDS] [-n N] [--once] [--count N] [--json]\n"
		"A live view of KSM: ksmd's settings, CPU and scan rate, the memory\n"
		"saved and its trend over the last minute, the processes with the\n"
		"most merged pages and, with cgroup v2, the totals per cgroup.\n"
		"\n"
		"  -d, --delay SECONDS  interval between snapshots (default 1)\n"
		"  -n, --top N          processes and cgroups listed (default 10)\n"
		"  -1, --once           one snapshot, then exit; it takes two\n"
		"                       samples one interval apart for the rates;\n"
		"                       with -d 0 one sample, rates unknown\n"
		"  -c, --count N        exit after N snapshots\n"
		"  -j, --json           one JSON object a line per snapshot\n"
		"                       instead of the screen\n"
		"  -h, --help           this text\n"
		"\n"
		"Rates (ksmd cpu %%, pages/s) are over the last interval; the\n"
		"full-scan time shows once two full_scans increments were seen.\n"
		"The trend covers the last 60 snapshots (a minute at -d 1).\n"
		"A value the kernel does not provide is shown as - (JSON null).\n"
		"KSMTOP_SYSFS=DIR reads DIR instead of %s.\n"
		"Exit status: 0, 1 without KSM in the kernel, 2 on a bad option.\n",
		KSM_SYSFS);
}

/*
 * Sleep until monotonic time @until. SIGINT, SIGTERM and SIGHUP are
 * blocked and taken here: one of them ends ksmtop after the snapshot it
 * is writing, never in the middle of a line.
 */
static void sleep_until(double until)
{
	double left;

	while (!stop && (left = until - monotonic()) > 0) {
		struct timespec ts = {
			.tv_sec = (time_t)left,
			.tv_nsec = (long)((left - (time_t)left) * 1e9),
		};

		if (sigtimedwait(&stop_signals, NULL, &ts) > 0)
			stop = true;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "top", required_argument, NULL, 'n' },
		{ "once", no_argument, NULL, '1' },
		{ "count", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct scan_clock clock = { 0, NA, NAN };
	struct sample cur = { 0 }, prev = { 0 };
	struct rates rates = { NAN, NAN, NAN };
	double interval = 1;
	struct trend trend = { 0 };
	bool json = false;
	long count = 0, shown = 0;
	char path[PATH_MAX], *end;
	int top = 10, opt;

	while ((opt = getopt_long(argc, argv, "d:n:1c:jh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'd':
			interval = strtod(optarg, &end);
			if (*end || end == optarg || !(interval >= 0) ||
			    interval > 86400) {
				fprintf(stderr, "ksmtop: bad interval '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			top = atoi(optarg);
			if (top < 0) {
				fprintf(stderr, "ksmtop: bad count '%s'\n",
					optarg);
				return 2;
			}
			break;
		case '1':
			count = 1;
			break;
		case 'c':
			count = atol(optarg);
			if (count <= 0) {
				fprintf(stderr, "ksmtop: bad count '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (interval == 0 && count != 1) {
		fprintf(stderr, "ksmtop: -d 0 only with --once\n");
		return 2;
	}
	if (getenv("KSMTOP_SYSFS"))
		ksm_dir = getenv("KSMTOP_SYSFS");
	snprintf(path, sizeof(path), "%s/run", ksm_dir);
	if (access(path, R_OK)) {
		fprintf(stderr,
			"ksmtop: cannot read %s: %s\n"
			"ksmtop: this kernel has no KSM (CONFIG_KSM=n), or sysfs is not mounted\n",
			path, strerror(errno));
		return 1;
	}
	page_size = sysconf(_SC_PAGESIZE);
	clk_tck = sysconf(_SC_CLK_TCK);
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop_signals, NULL);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);

	take_sample(&cur, -1);
	while (!stop) {
		if (interval > 0) {
			struct sample tmp = prev;

			/*
			 * An interval from the start of one sample to the
			 * next, never shorter even if sampling took long:
			 * ksmd's CPU time moves by clock ticks.
			 */
			prev = cur;
			cur = tmp;
			sleep_until(prev.t + interval);
			if (stop)
				break;
			take_sample(&cur, prev.ksmd_pid);
			update_rates(&rates, &clock, &prev, &cur);
		}
		trend_add(&trend, &cur, &rates);
		if (json) {
			print_json(&cur, &rates, &trend, interval, top);
		} else {
			if (count != 1)
				printf("\033[H\033[2J");
			print_text(&cur, &rates, &trend, interval, top);
		}
		fflush(stdout);
		if (count && ++shown >= count)
			break;
	}
	free(cur.procs);
	free(cur.groups);
	free(prev.procs);
	free(prev.groups);
	return 0;
}

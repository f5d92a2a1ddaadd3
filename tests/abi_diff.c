// SPDX-License-Identifier: GPL-2.0
/*
 * abi_diff.c - one scripted, deterministic KSM workload whose every
 * user-visible effect is printed as "key value" lines, for
 * scripts/abi-diff.sh to compare between the stock kernel and ours.
 * Not a test of its own: it prints what it sees and always exits 0.
 *
 * Layout, at fixed addresses (one PROT_NONE reservation, a guard page
 * between regions so that each is a VMA of its own):
 *   dup   8 groups of 4 identical pages (labels g0..g7)
 *   uniq  16 pages of distinct content
 *   vol   8 pages rewritten with new content before every scan
 *   zero  16 zero-filled pages (label gz)
 *   child 10 pages of a child forked before anything is mergeable: one
 *         copy of each group, then 2 zero-filled pages
 * ksmd runs in the library's step mode: ksm_step() is exactly one full
 * scan, pages_to_scan covers every page, so both kernels do the same
 * scans. Phases (snapshot after each step, "PHASE.stepN.KEY VALUE"):
 *   smart0   smart_scan=0, use_zero_pages=0
 *   smart1   run=2, fresh regions, smart_scan=1
 *   zero     run=2, fresh regions, smart_scan=0, use_zero_pages=1
 *   advisor  advisor_mode=scan-time for 3 steps, then back to none
 *   cow      writes to merged pages, MADV_UNMERGEABLE on part, run=2
 *   exit     the child exits
 * A snapshot: every file of /sys/kernel/mm/ksm (ksm.*), both processes'
 * ksm_stat (stat.*) and ksm_merging_pages (merging.*), the smaps KSM: kB
 * of each region (smaps.*), /proc/vmstat cow_ksm and ksm_swpin_copy since
 * the start (vmstat.*), pages not holding their content (content.*), and
 * the events/ksm records since the last snapshot (trace.*), normalised:
 * mm as self/child/other, rmap_item as item or item=null, a pfn as zero,
 * the group whose pages map it (g0..g7, gz) or page:REGION:INDEX, seq
 * relative to full_scans at the last snapshot; sorted, with counts.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ksmtest.h"

#define TRACEFS "/sys/kernel/tracing"
#define GROUPS 8
#define PER_GROUP 4
#define SEED_GROUP 0xd1ff0
#define SEED_UNIQ 0xd1ff1
#define SEED_VOL 0xd1ff2	/* + generation */

enum { R_DUP, R_UNIQ, R_VOL, R_ZERO, R_CHILD, NR_REGIONS };

struct region {
	const char *name;
	size_t pages;
	char *base;
	pid_t pid;		/* 0: this process; -1: none */
	uint64_t flipped;	/* pages whose first byte the cow phase flipped */
};

static struct region regions[NR_REGIONS] = {
	{ .name = "dup", .pages = GROUPS * PER_GROUP },
	{ .name = "uniq", .pages = 16 }, { .name = "vol", .pages = 8 },
	{ .name = "zero", .pages = 16 }, { .name = "child", .pages = GROUPS + 2 },
};

static unsigned int vol_gen;
static unsigned long zero_pfn;
static long vm_base[2], last_scans;
static const char *const vm_keys[2] = { "cow_ksm", "ksm_swpin_copy" };
static struct kids kids;

/* The content page @i of @r must hold, into @buf. */
static void expected(const struct region *r, size_t i, char *buf)
{
	int id = r - regions;

	memset(buf, 0, page_size);
	if (id == R_DUP)
		fill_pattern(buf, SEED_GROUP, i / PER_GROUP);
	else if (id == R_UNIQ)
		fill_pattern(buf, SEED_UNIQ, i);
	else if (id == R_VOL)
		fill_pattern(buf, SEED_VOL + vol_gen, i);
	else if (id == R_CHILD && i < GROUPS)
		fill_pattern(buf, SEED_GROUP, i);
	if (r->flipped & (1ULL << i))
		buf[0] ^= 0xff;
}

static void fill_region(struct region *r)
{
	for (size_t i = 0; i < r->pages; i++)
		expected(r, i, r->base + i * page_size);
}

static size_t bad_pages(const struct region *r)
{
	char *buf = malloc(page_size);
	size_t bad = 0;

	for (size_t i = 0; buf && i < r->pages; i++) {
		expected(r, i, buf);
		bad += !!memcmp(buf, r->base + i * page_size, page_size);
	}
	free(buf);
	return bad;
}

/* A fresh mergeable mapping of @r at its fixed address, filled. */
static void map_region(struct region *r)
{
	void *p = mmap(r->base, r->pages * page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p != r->base) {
		perror("mmap");
		exit(2);
	}
	madvise(p, r->pages * page_size, MADV_NOHUGEPAGE);
	r->flipped = 0;
	r->pid = 0;
	fill_region(r);
	if (merge_pages(p, r->pages))
		printf("# MADV_MERGEABLE %s failed\n", r->name);
}

static void reserve_regions(void)
{
	size_t total = 0;
	char *p;

	for (int i = 0; i < NR_REGIONS; i++)
		total += regions[i].pages + 1;
	p = mmap(NULL, total * page_size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	for (int i = 0; i < NR_REGIONS; i++) {
		regions[i].base = p + page_size;
		p += (regions[i].pages + 1) * page_size;
	}
}

/* The child: fills its region, madvises it, then answers commands. */
static int child_main(void *arg, int idx, int cmd_fd, int reply_fd)
{
	struct region *r = &regions[R_CHILD];

	map_region(r);
	kid_reply(reply_fd, 'r');
	while (kid_wait_cmd(cmd_fd) != 'q')
		kid_reply(reply_fd, bad_pages(r) ? 'x' : '0');
	return 0;
}

/* pfn -> label tables: at this snapshot, and at the one before. */
#define MAX_PFNS 256
struct pfn_table {
	int n;
	unsigned long pfn[MAX_PFNS];
	char label[MAX_PFNS][40];
};
static struct pfn_table cur, prev;

static void page_label(const struct region *r, size_t i, char *buf,
		       size_t size)
{
	int id = r - regions;

	if (r->flipped & (1ULL << i))
		snprintf(buf, size, "page:%s:%zu", r->name, i);
	else if (id == R_DUP)
		snprintf(buf, size, "g%zu", i / PER_GROUP);
	else if (id == R_ZERO || (id == R_CHILD && i >= GROUPS))
		snprintf(buf, size, "gz");
	else if (id == R_CHILD)
		snprintf(buf, size, "g%zu", i);
	else
		snprintf(buf, size, "page:%s:%zu", r->name, i);
}

static void scan_pfns(struct pfn_table *t)
{
	t->n = 0;
	for (int id = 0; id < NR_REGIONS; id++) {
		struct region *r = &regions[id];

		for (size_t i = 0; r->pid >= 0 && i < r->pages; i++) {
			unsigned long pfn = pid_pfn(r->pid, r->base + i * page_size);

			if (!pfn || pfn == zero_pfn || t->n == MAX_PFNS)
				continue;
			t->pfn[t->n] = pfn;
			page_label(r, i, t->label[t->n], sizeof(t->label[0]));
			t->n++;
		}
	}
}

/*
 * What @pfn was at the last snapshot, else what it is now (a page the
 * kernel allocated since). The last snapshot first: a page freed since
 * (a KSM page unmerged) may be reused for a new page by now.
 */
static const char *pfn_label(unsigned long pfn)
{
	for (int i = 0; i < prev.n; i++)
		if (prev.pfn[i] == pfn)
			return prev.label[i];
	for (int i = 0; i < cur.n; i++)
		if (cur.pfn[i] == pfn)
			return cur.label[i];
	return pfn == zero_pfn ? "zero" : "other";
}

/* Hashed mm pointers, learnt from ksm_enter records by the task's pid. */
static struct { char hash[32]; const char *label; } mms[16];
static int nr_mms;

static const char *mm_label(const char *hash)
{
	for (int i = 0; i < nr_mms; i++)
		if (!strcmp(mms[i].hash, hash))
			return mms[i].label;
	return "other";
}

/* The pid of a trace line "  comm-PID  [CPU] ...", or -1. */
static pid_t line_pid(const char *line)
{
	const char *end = strstr(line, " [");
	const char *p = end;

	while (p && p > line && p[-1] != '-')
		p--;
	return p && p > line ? atoi(p) : -1;
}

static void learn_mm(const char *line)
{
	const char *s = strstr(line, " ksm_enter: mm ");
	pid_t pid = line_pid(line);
	char hash[32];

	if (!s || nr_mms == ARRAY_SIZE(mms) ||
	    sscanf(s + 15, "%31s", hash) != 1 ||
	    strcmp(mm_label(hash), "other"))
		return;
	if (pid == getpid())
		mms[nr_mms].label = "self";
	else if (kids.n && pid == kids.pid[0])
		mms[nr_mms].label = "child";
	else
		return;
	strcpy(mms[nr_mms++].hash, hash);
}

#define MAX_RECS 4096
#define REC_LEN 128
static char recs[MAX_RECS][REC_LEN];
static int nr_recs;
static long adv_pages = -1, adv_cpu = -1;

static bool null_ptr(const char *s)
{
	return !strcmp(s, "(null)") || strspn(s, "0") == strlen(s);
}

/* One field "name value" of a record body, normalised, into @out. */
static void norm_field(const char *name, const char *val, char *out,
		       size_t size)
{
	if (!strcmp(name, "pfn"))
		snprintf(out, size, "pfn=%s", pfn_label(strtoul(val, NULL, 10)));
	else if (!strcmp(name, "mm"))
		snprintf(out, size, "mm=%s", mm_label(val));
	else if (!strcmp(name, "rmap_item"))
		snprintf(out, size, "%s", null_ptr(val) ? "item=null" : "item");
	else if (!strcmp(name, "error"))
		snprintf(out, size, "err=%s", val);
	else if (!strcmp(name, "seq"))
		snprintf(out, size, "seq=%+ld", atol(val) - last_scans);
	else
		snprintf(out, size, "%s=%s", name, val);
}

static void add_record(const char *event, char *body)
{
	char *rec = recs[nr_recs], *tok, *save, field[64];
	long long scan_time;
	unsigned long pages;
	unsigned int cpu;

	snprintf(rec, REC_LEN, "%s", event);
	if (sscanf(body, "ksm scan time %lld pages_to_scan %lu cpu percent %u",
		   &scan_time, &pages, &cpu) == 3) {
		/* ksm_advisor: pages and CPU depend on timing, keys apart. */
		adv_pages = pages;
		adv_cpu = cpu;
		snprintf(rec + strlen(rec), REC_LEN - strlen(rec),
			 "/scan_time=%lld", scan_time);
		nr_recs++;
		return;
	}
	for (tok = strtok_r(body, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		const char *val;

		if (!strcmp(tok, "ksm")) {	/* a kpage, or the "ksm pfn" */
			snprintf(field, sizeof(field), "ksm");
		} else if (!strcmp(tok, "rmap")) {	/* "rmap size N" */
			strtok_r(NULL, " ", &save);
			val = strtok_r(NULL, " ", &save);
			snprintf(field, sizeof(field), "rmap=%s", val ?: "?");
		} else {
			val = strtok_r(NULL, " ", &save);
			norm_field(tok, val ?: "?", field, sizeof(field));
		}
		snprintf(rec + strlen(rec), REC_LEN - strlen(rec), "/%s", field);
	}
	nr_recs++;
}

/* Normalise one trace line "...: ksm_EVENT: BODY" into recs[]. */
static void norm_line(char *line)
{
	char *event = strstr(line, ": ksm_"), *body;

	if (line[0] == '#' || !event || nr_recs == MAX_RECS)
		return;
	event += 2;
	body = strstr(event, ": ");
	if (!body)
		return;
	*body = '\0';
	body += 2;
	body[strcspn(body, "\n")] = '\0';
	add_record(event, body);
}

static int cmp_rec(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void dump_trace(const char *pfx)
{
	FILE *f = fopen(TRACEFS "/trace", "r");
	char line[512];
	int i, j;

	if (!f) {
		printf("%s.trace unreadable\n", pfx);
		return;
	}
	while (fgets(line, sizeof(line), f))
		learn_mm(line);
	rewind(f);
	nr_recs = 0;
	adv_pages = adv_cpu = -1;
	while (fgets(line, sizeof(line), f))
		norm_line(line);
	fclose(f);
	write_file_trunc(TRACEFS "/trace", "");
	qsort(recs, nr_recs, REC_LEN, cmp_rec);
	for (i = 0; i < nr_recs; i = j) {
		for (j = i; j < nr_recs && !strcmp(recs[i], recs[j]); j++)
			;
		printf("%s.trace.%s %d\n", pfx, recs[i], j - i);
	}
	if (adv_pages >= 0)
		printf("%s.advisor.pages_to_scan %ld\n%s.advisor.cpu_percent %ld\n",
		       pfx, adv_pages, pfx, adv_cpu);
}

static int visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void dump_sysfs(const char *pfx)
{
	struct dirent **names;
	char path[300], buf[256];
	int n, err;

	n = scandir(KSM_DIR, &names, visible, alphasort);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), KSM_DIR "%s", names[i]->d_name);
		err = read_file(path, buf, sizeof(buf));
		printf("%s.ksm.%s %s\n", pfx, names[i]->d_name,
		       err ? strerror(-err) : buf);
		free(names[i]);
	}
	free(n >= 0 ? names : NULL);
}

/* ksm_stat and ksm_merging_pages of @pid (0: this process) as @who. */
static void dump_proc(const char *pfx, pid_t pid, const char *who)
{
	char path[64], key[64];
	long val;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/ksm_stat", pid ?: getpid());
	f = fopen(path, "r");
	while (f && fscanf(f, "%63s %ld", key, &val) == 2)
		printf("%s.stat.%s.%s %ld\n", pfx, who, key, val);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/ksm_merging_pages", pid ?: getpid());
	printf("%s.merging.%s %ld\n", pfx, who, read_long(path));
}

/* The KSM: kB of every smaps entry of @pid within region @r, summed. */
static long smaps_ksm(const struct region *r)
{
	unsigned long start, end, lo = (unsigned long)r->base;
	unsigned long hi = lo + r->pages * page_size;
	char path[64], line[256];
	bool in = false;
	long sum = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", r->pid ?: getpid());
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = start < hi && end > lo;
		else if (in && !strncmp(line, "KSM:", 4))
			sum += strtol(line + 4, NULL, 10);
	}
	fclose(f);
	return sum;
}

static void dump_pages(const char *pfx)
{
	char reply = '-';
	size_t bad = 0;

	for (int id = 0; id < NR_REGIONS; id++)
		if (regions[id].pid >= 0)
			printf("%s.smaps.%s %ld\n", pfx, regions[id].name,
			       smaps_ksm(&regions[id]));
	for (int i = 0; i < 2; i++) {
		long v = vmstat(vm_keys[i]);

		if (v < 0 || vm_base[i] < 0)
			printf("%s.vmstat.%s -\n", pfx, vm_keys[i]);
		else
			printf("%s.vmstat.%s %ld\n", pfx, vm_keys[i], v - vm_base[i]);
	}
	for (int id = 0; id < R_CHILD; id++)
		bad += regions[id].pid ? 0 : bad_pages(&regions[id]);
	printf("%s.content.self %zu\n", pfx, bad);
	if (regions[R_CHILD].pid > 0) {
		kid_call(&kids, 0, 'c', &reply);
		printf("%s.content.child %c\n", pfx, reply);
	}
}

static void snapshot(const char *phase, const char *step)
{
	char pfx[32];

	snprintf(pfx, sizeof(pfx), "%s.%s", phase, step);
	scan_pfns(&cur);
	dump_sysfs(pfx);
	dump_proc(pfx, 0, "self");
	if (regions[R_CHILD].pid > 0)
		dump_proc(pfx, regions[R_CHILD].pid, "child");
	dump_pages(pfx);
	dump_trace(pfx);
	prev = cur;
	last_scans = ksm_read("full_scans");
}

/* Steps @first..@last of @phase: new volatile content, a scan, a snapshot. */
static void steps(const char *phase, int first, int last)
{
	char step[16];

	for (int s = first; s <= last; s++) {
		vol_gen++;
		fill_region(&regions[R_VOL]);
		snprintf(step, sizeof(step), "step%d", s);
		printf("%s.%s.scanned %d\n", phase, step, ksm_step());
		snapshot(phase, step);
	}
}

/* run=2 (snapshot PHASE.reset), fresh regions, step mode. */
static void fresh_phase(const char *phase, int smart, int zero)
{
	ksm_write("run", 2);
	snapshot(phase, "reset");
	for (int id = 0; id < R_CHILD; id++)
		map_region(&regions[id]);
	scan_pfns(&prev);	/* the old regions' pfns may be reused now */
	ksm_write("smart_scan", smart);
	ksm_write("use_zero_pages", zero);
	ksm_step_mode();
	ksm_write("pages_to_scan", 10000);
}

static void phase_advisor(void)
{
	ksm_write("advisor_max_pages_to_scan", 10000);
	ksm_write("advisor_min_pages_to_scan", 10000);
	ksm_write_str("advisor_mode", "scan-time");
	snapshot("advisor", "on");
	steps("advisor", 1, 3);
	ksm_write_str("advisor_mode", "none");
	snapshot("advisor", "off");
	ksm_write("advisor_min_pages_to_scan", 500);
	ksm_write("advisor_max_pages_to_scan", 30000);
	ksm_write("pages_to_scan", 10000);
}

static void flip(int id, size_t i)
{
	regions[id].base[i * page_size] ^= 0xff;
	regions[id].flipped |= 1ULL << i;
}

static void phase_cow(void)
{
	char *dup = regions[R_DUP].base, *zero = regions[R_ZERO].base;

	flip(R_DUP, 0);		/* a page of g0's KSM page */
	flip(R_ZERO, 0);	/* a page mapping the zero page */
	snapshot("cow", "write");
	steps("cow", 1, 2);
	madvise(dup + PER_GROUP * page_size, PER_GROUP * page_size,
		MADV_UNMERGEABLE);	/* all of g1 */
	madvise(zero + 8 * page_size, 8 * page_size, MADV_UNMERGEABLE);
	snapshot("cow", "unmerge");
	steps("cow", 3, 4);
	ksm_write("run", 2);
	snapshot("cow", "run2");
}

/* The pfn of a read fault on untouched anonymous memory. */
static unsigned long find_zero_pfn(void)
{
	volatile char *p = map_unfaulted(1);

	(void)p[0];
	return page_pfn((const void *)p);
}

/* Every event of events/ksm on, an empty buffer. */
static void setup_trace(void)
{
	if (access(TRACEFS "/trace", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	write_file_trunc(TRACEFS "/tracing_on", "0");
	if (write_file_trunc(TRACEFS "/events/ksm/enable", "1"))
		printf("# no events/ksm\n");
	write_file_trunc(TRACEFS "/trace", "");
	write_file_trunc(TRACEFS "/tracing_on", "1");
}

int main(void)
{
	char reply;

	for (int id = 0; id < NR_REGIONS; id++)
		regions[id].pid = -1;
	ksm_save_settings();
	setup_trace();
	for (int i = 0; i < 2; i++)
		vm_base[i] = vmstat(vm_keys[i]);
	zero_pfn = find_zero_pfn();
	printf("# abi_diff: zero pfn %s\n", zero_pfn ? "found" : "not found");
	snapshot("start", "boot");	/* the defaults */

	ksm_write("run", 2);
	ksm_write("max_page_sharing", 256);
	ksm_write("merge_across_nodes", 1);
	ksm_write("smart_scan", 0);
	ksm_write("use_zero_pages", 0);
	if (ksm_step_mode())
		printf("# no ksmd: no step mode\n");
	ksm_write("pages_to_scan", 10000);

	reserve_regions();	/* the child's region stays PROT_NONE here */
	fflush(stdout);
	if (kids_start(&kids, 1, child_main, NULL) || !kids_collect(&kids, &reply)) {
		printf("# no child\n");
		regions[R_CHILD].pid = -1;
	} else {
		regions[R_CHILD].pid = kids.pid[0];
	}
	for (int id = 0; id < R_CHILD; id++)
		map_region(&regions[id]);
	snapshot("start", "setup");

	steps("smart0", 1, 8);
	fresh_phase("smart1", 1, 0);
	steps("smart1", 1, 12);
	fresh_phase("zero", 0, 1);
	steps("zero", 1, 4);
	phase_advisor();
	phase_cow();
	if (regions[R_CHILD].pid > 0) {
		kid_send(&kids, 0, 'q');
		printf("exit.child.status %d\n", kid_reap(&kids, 0));
		regions[R_CHILD].pid = -1;
	}
	snapshot("exit", "child");
	printf("# abi_diff done\n");
	return 0;
}

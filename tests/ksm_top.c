// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_top.c - ksmtop (tools/mm/ksmtop.c, /guest/bin/ksmtop) shows what the
 * kernel says. Two children in a cgroup of their own map known numbers of
 * merged pages (child 0: 64 pages of one content and 32 of another, child
 * 1: 32 and 16); with ksmd paused so that nothing moves, ksmtop's JSON
 * snapshot must hold every /sys/kernel/mm/ksm value as sysfs reads it
 * (null where the file is absent), each child's ksm_stat figures, and the
 * cgroup's sums of them; its text screen the same numbers. Then, ksmd
 * running, the rates over an interval; without KSM it must say so and
 * exit with status 1, and files a kernel lacks are null, not an error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define KSMTOP		"/guest/bin/ksmtop"
#define CG		CGROUP_ROOT "/ksm_top"
#define CG_NAME		"/ksm_top"
#define KIDS		2
#define SEED_A		61
#define SEED_B		62

/* Child i maps a_pages[i] pages of content A, then b_pages[i] of B. */
static const int a_pages[KIDS] = { 64, 32 };
static const int b_pages[KIDS] = { 32, 16 };
static bool in_cgroup;
static struct kids k;

/* The files ksmtop reads from /sys/kernel/mm/ksm, as it names them. */
static const char *const sysfs_keys[] = {
	"run", "pages_to_scan", "sleep_millisecs", "max_page_sharing",
	"merge_across_nodes", "use_zero_pages", "smart_scan", "full_scans",
	"pages_scanned", "pages_shared", "pages_sharing", "pages_unshared",
	"pages_volatile", "pages_skipped", "ksm_zero_pages", "general_profit",
	"stable_node_chains", "stable_node_dups", "max_kernel_pages",
	"kernel_pages_allocated", "merge_all", "zero_pages_only", "estimate",
	"estimated_pages_sharing", "estimated_zero_pages", "pressure_only",
	"pressure_level",
};

/* The sysfs values the text screen shows under their names. */
static const char *const text_keys[] = {
	"run", "pages_to_scan", "sleep_millisecs", "max_page_sharing",
	"merge_across_nodes", "use_zero_pages", "smart_scan", "full_scans",
	"pages_scanned", "pages_shared", "pages_sharing", "pages_unshared",
	"pages_volatile", "ksm_zero_pages", "max_kernel_pages",
	"general_profit", "merge_all", "zero_pages_only", "estimate",
	"estimated_pages_sharing", "estimated_zero_pages", "pressure_only",
	"pressure_level",
};

/* The figures of a process (or cgroup) as ksm_stat and ksmtop name them. */
static const char *const stat_keys[] = {
	"ksm_merging_pages", "ksm_rmap_items", "ksm_zero_pages",
	"ksm_process_profit",
};

static int kid_main(void *arg, int i, int cmd, int reply)
{
	int n = a_pages[i] + b_pages[i];
	char *p;
	char c;

	if (in_cgroup && write_file(CG "/cgroup.procs", "0"))
		return 1;
	p = map_pages(n);
	for (int j = 0; j < n; j++)
		fill_pattern(p + j * page_size, j < a_pages[i] ? SEED_A : SEED_B,
			     0);
	if (merge_pages(p, n))
		return 1;
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) == 'c') {
		int bad = 0;

		for (int j = 0; j < n; j++)
			bad += !holds_pattern(p + j * page_size,
					      j < a_pages[i] ? SEED_A : SEED_B,
					      0);
		kid_reply(reply, bad ? 'x' : 'k');
	}
	return 0;
}

/* Run @cmd (stderr too), its output into @buf; its exit status or -1. */
static int run(const char *cmd, char *buf, size_t size)
{
	size_t len = 0, got;
	FILE *f;
	int status;

	buf[0] = '\0';
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (len + 1 < size &&
	       (got = fread(buf + len, 1, size - 1 - len, f)) > 0)
		len += got;
	buf[len] = '\0';
	status = pclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * The value of "@key": in the flat JSON object text @obj: 1 and *@v for a
 * number, 0 for null, -1 if the key is absent or holds something else.
 */
static int json_num(const char *obj, const char *key, double *v)
{
	char pat[80], *end;
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(obj, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	if (!strncmp(p, "null", 4))
		return 0;
	*v = strtod(p, &end);
	return end == p ? -1 : 1;
}

/* Copy into @out the object of @json that starts with @start, up to '}'. */
static bool json_object(const char *json, const char *start, char *out,
			size_t size)
{
	const char *p = strstr(json, start);
	const char *e = p ? strchr(p, '}') : NULL;

	if (!e || (size_t)(e - p) >= size)
		return false;
	memcpy(out, p, e - p);
	out[e - p] = '\0';
	return true;
}

/* The top-level part of a snapshot: everything before its lists. */
static void json_top(const char *json, char *out, size_t size)
{
	const char *e = strstr(json, "\"processes\":");
	size_t n = e ? (size_t)(e - json) : strlen(json);

	if (n >= size)
		n = size - 1;
	memcpy(out, json, n);
	out[n] = '\0';
}

/* Does key @key of @obj hold @want (or null when @want is -1 and absent)? */
static void check_num(const char *what, const char *obj, const char *key,
		      long want, bool present)
{
	double v = 0;
	int r = json_num(obj, key, &v);

	if (!present) {
		CHECK(r == 0, "%s %s: %s, want null", what, key,
		      r < 0 ? "absent" : "a number");
		return;
	}
	CHECK(r == 1 && (long)v == want, "%s %s: %s%.0f, want %ld", what, key,
	      r == 1 ? "" : r ? "absent " : "null ", v, want);
}

static void check_sysfs(const char *top)
{
	char buf[64];

	for (size_t i = 0; i < ARRAY_SIZE(sysfs_keys); i++) {
		bool present = !ksm_read_str(sysfs_keys[i], buf, sizeof(buf));

		check_num("json", top, sysfs_keys[i],
			  present ? strtol(buf, NULL, 10) : 0, present);
	}
}

static void check_kid(const char *json, int i, long sums[])
{
	pid_t pid = k.pid[i];
	char start[32], obj[1024];

	snprintf(start, sizeof(start), "{\"pid\":%d,", pid);
	if (!CHECK(json_object(json, start, obj, sizeof(obj)),
		   "child %d (pid %d) not in the process list", i, pid))
		return;
	CHECK(ksm_stat(pid, "ksm_merging_pages") == a_pages[i] + b_pages[i],
	      "child %d ksm_stat ksm_merging_pages %ld, want %d", i,
	      ksm_stat(pid, "ksm_merging_pages"), a_pages[i] + b_pages[i]);
	for (size_t j = 0; j < ARRAY_SIZE(stat_keys); j++) {
		long v = ksm_stat(pid, stat_keys[j]);

		check_num("child", obj, stat_keys[j], v, true);
		sums[j] += v;
	}
	if (in_cgroup)
		CHECK(strstr(obj, "\"cgroup\":\"" CG_NAME "\""),
		      "child %d cgroup: %s", i, obj);
}

/* With ksmd paused: every figure of the JSON snapshot against the kernel. */
static void test_json(void)
{
	static char json[1 << 16], top[1 << 14];
	long sums[ARRAY_SIZE(stat_keys)] = { 0 };
	char obj[1024];
	double v;
	int rc;

	CHECK(ksm_pause() == 0, "run=0");
	rc = run(KSMTOP " --once --json -d 0 -n 100", json, sizeof(json));
	CHECK(rc == 0, "ksmtop exit status %d: %s", rc, json);
	CHECK(strchr(json, '\n') == strrchr(json, '\n'),
	      "more than one line: %s", json);
	json_top(json, top, sizeof(top));
	check_sysfs(top);
	check_num("json", top, "page_size", page_size, true);
	check_num("json", top, "saved_bytes",
		  (ksm_read("pages_sharing") +
		   (ksm_read("ksm_zero_pages") > 0 ?
		    ksm_read("ksm_zero_pages") : 0)) * page_size, true);
	CHECK(json_num(top, "ksmd_pid", &v) == 1 && v > 0, "ksmd_pid");
	CHECK(json_num(top, "ksmd_cpu_seconds", &v) == 1 && v >= 0,
	      "ksmd_cpu_seconds");
	/* One sample (-d 0): no rates. */
	CHECK(json_num(top, "scan_rate", &v) == 0, "scan_rate not null");
	CHECK(json_num(top, "ksmd_cpu_pct", &v) == 0, "ksmd_cpu_pct not null");
	CHECK(ksm_read("pages_shared") == 2 && ksm_read("pages_sharing") ==
	      a_pages[0] + b_pages[0] + a_pages[1] + b_pages[1] - 2,
	      "pages_shared %ld, pages_sharing %ld", ksm_read("pages_shared"),
	      ksm_read("pages_sharing"));
	for (int i = 0; i < KIDS; i++)
		check_kid(json, i, sums);
	if (!in_cgroup) {
		CHECK(strstr(json, "\"cgroups\":null") || access(CG, F_OK),
		      "cgroups");
	} else if (CHECK(json_object(json, "{\"cgroup\":\"" CG_NAME "\",",
				     obj, sizeof(obj)),
			 "no cgroup " CG_NAME " in %s", json)) {
		check_num("cgroup", obj, "procs", KIDS, true);
		for (size_t j = 0; j < ARRAY_SIZE(stat_keys); j++)
			check_num("cgroup", obj, stat_keys[j], sums[j], true);
		/* samepage's memory.ksm: shown as it reads, null without. */
		CHECK(strstr(obj, access(CG "/memory.ksm", F_OK) ?
			      "\"memory_ksm\":null" :
			      "\"memory_ksm\":\"default\""),
		      "memory_ksm: %s", obj);
	}
	ktap_result(checks_passed(), "json_snapshot_matches_the_kernel");
}

/* The word after " @name " in @text, "" if absent. */
static void text_word(const char *text, const char *name, char *buf,
		      size_t size)
{
	char pat[64];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), " %s ", name);
	p = strstr(text, pat);
	buf[0] = '\0';
	if (!p)
		return;
	p += strlen(pat);
	n = strcspn(p, "\n ");
	snprintf(buf, size, "%.*s", (int)n, p);
}

/* The value after " @name " in @text; -1 if absent. */
static long text_value(const char *text, const char *name)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s ", name);
	p = strstr(text, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* The text screen line of @first token @key: its next numbers. */
static bool text_row(const char *text, const char *key, long *a, long *b)
{
	char line[512], tok0[64], tok1[256];
	const char *p = text;

	while (*p) {
		size_t n = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		p += n + (p[n] == '\n');
		if (sscanf(line, "%63s %255s %ld %ld", tok0, tok1, a, b) == 4 &&
		    (!strcmp(tok0, key) || !strcmp(tok1, key)))
			return true;
	}
	return false;
}

/* Still paused: the text screen shows the same numbers. */
static void test_text(void)
{
	static char text[1 << 16];
	long a, b, merging = 0;
	char pid[16];
	int rc;

	rc = run(KSMTOP " --once -d 0 -n 100", text, sizeof(text));
	CHECK(rc == 0, "ksmtop exit status %d", rc);
	CHECK(!strchr(text, '\033'), "--once printed escape sequences");
	for (size_t i = 0; i < ARRAY_SIZE(text_keys); i++) {
		char want[64], shown[64];

		if (ksm_read_str(text_keys[i], want, sizeof(want)))
			snprintf(want, sizeof(want), "-");
		text_word(text, text_keys[i], shown, sizeof(shown));
		CHECK(!strcmp(shown, want), "text %s '%s', sysfs '%s'",
		      text_keys[i], shown, want);
	}
	CHECK(text_value(text, "pages_shared") == 2, "text pages_shared");
	CHECK(text_value(text, "saved_bytes") ==
	      ksm_read("pages_sharing") * (long)page_size +
	      (ksm_read("ksm_zero_pages") > 0 ?
	       ksm_read("ksm_zero_pages") * (long)page_size : 0),
	      "text saved_bytes %ld", text_value(text, "saved_bytes"));
	for (int i = 0; i < KIDS; i++) {
		snprintf(pid, sizeof(pid), "%d", k.pid[i]);
		a = -1;
		CHECK(text_row(text, pid, &a, &b) &&
		      a == a_pages[i] + b_pages[i],
		      "text row of child %d: merging %ld, want %d", i, a,
		      a_pages[i] + b_pages[i]);
		merging += a_pages[i] + b_pages[i];
	}
	if (in_cgroup) {
		a = -1;
		CHECK(text_row(text, CG_NAME, &a, &b) && a == merging,
		      "text row of " CG_NAME ": %ld, want %ld", a, merging);
	}
	if (!checks_passed_so_far())
		ktap_diag("screen:\n%s", text);
	ktap_result(checks_passed(), "text_screen_matches_the_kernel");
}

/* ksmd running: the rates over an interval, the full-scan time. */
static void test_rates(void)
{
	static char out[1 << 18];
	long scans0, scans1;
	char *line, *save;
	int rc, lines = 0, timed = 0;
	double v, cpu;
	int r;

	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_scans(1), "ksmd scans");
	scans0 = ksm_read("full_scans");
	rc = run(KSMTOP " --json -d 0.5 --count 6 -n 5", out, sizeof(out));
	scans1 = ksm_read("full_scans");
	CHECK(rc == 0, "ksmtop exit status %d", rc);
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		lines++;
		CHECK(json_num(line, "scan_rate", &v) == 1 && v >= 0,
		      "scan_rate in line %d", lines);
		/*
		 * One thread: up to 100% of a CPU, and the ticks that land
		 * on either side of a short interval (a slow guest, as
		 * under KASAN, has been seen at 113%).
		 */
		r = json_num(line, "ksmd_cpu_pct", &cpu);
		CHECK(r == 1 && cpu >= 0 && cpu <= 150,
		      "ksmd_cpu_pct %.1f (%d) in line %d", cpu, r, lines);
		CHECK(json_num(line, "interval", &v) == 1 && v == 0.5,
		      "interval");
		CHECK(json_num(line, "trend_samples", &v) == 1 && v == lines,
		      "trend_samples %.0f in line %d", v, lines);
		timed += json_num(line, "full_scan_seconds", &v) == 1 && v > 0;
	}
	CHECK(lines == 6, "%d lines, want 6", lines);
	/* Three increments in 3 s: at least one interval saw two of them. */
	ktap_diag("full_scans %ld -> %ld, %d snapshot(s) with a full-scan time",
		  scans0, scans1, timed);
	if (scans1 - scans0 >= 6)
		CHECK(timed > 0, "no full-scan time after %ld full scans",
		      scans1 - scans0);
	ktap_result(checks_passed(), "rates_over_an_interval");
}

/* Content intact in every child after all that. */
static void test_content(void)
{
	char replies[KIDS];

	CHECK(kids_sync(&k, 'c', replies), "sync");
	for (int i = 0; i < KIDS; i++)
		CHECK(replies[i] == 'k', "child %d content: %c", i, replies[i]);
	ktap_result(checks_passed(), "content_intact");
}

static bool create_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	bool ok;

	if (!f)
		return false;
	ok = fputs(s, f) >= 0;
	return !fclose(f) && ok;
}

/* Without KSM: a message and status 1. Files a kernel lacks: null. */
static void test_degrade(void)
{
	static const char dir[] = "/tmp/ksm_top.sysfs";
	static char out[1 << 16];
	char top[4096];
	int rc;

	rc = run("KSMTOP_SYSFS=/nonexistent " KSMTOP " --once -d 0 2>&1",
		 out, sizeof(out));
	CHECK(rc == 1, "exit status %d without KSM, want 1", rc);
	CHECK(strstr(out, "no KSM"), "message: %s", out);
	CHECK(!strchr(out, '{'), "output: %s", out);

	/* An older kernel's ksm directory: a few files only. */
	mkdir(dir, 0755);
	CHECK(create_file("/tmp/ksm_top.sysfs/run", "1\n") &&
	      create_file("/tmp/ksm_top.sysfs/pages_shared", "7\n") &&
	      create_file("/tmp/ksm_top.sysfs/pages_sharing", "9\n"),
	      "fake sysfs");
	rc = run("KSMTOP_SYSFS=/tmp/ksm_top.sysfs " KSMTOP
		 " --once --json -d 0.1 2>&1", out, sizeof(out));
	CHECK(rc == 0, "exit status %d, output %s", rc, out);
	json_top(out, top, sizeof(top));
	check_num("fake", top, "run", 1, true);
	check_num("fake", top, "pages_shared", 7, true);
	check_num("fake", top, "pages_sharing", 9, true);
	check_num("fake", top, "saved_bytes", 9 * page_size, true);
	check_num("fake", top, "ksm_zero_pages", 0, false);
	check_num("fake", top, "general_profit", 0, false);
	check_num("fake", top, "max_kernel_pages", 0, false);
	check_num("fake", top, "scan_rate", 0, false);
	CHECK(strstr(top, "\"advisor_mode\":null"), "advisor_mode: %s", top);
	rc = run("KSMTOP_SYSFS=/tmp/ksm_top.sysfs " KSMTOP " --once -d 0 2>&1",
		 out, sizeof(out));
	CHECK(rc == 0 && text_value(out, "pages_sharing") == 9 &&
	      strstr(out, " ksm_zero_pages - "), "text: %d %s", rc, out);
	unlink("/tmp/ksm_top.sysfs/run");
	unlink("/tmp/ksm_top.sysfs/pages_shared");
	unlink("/tmp/ksm_top.sysfs/pages_sharing");
	rmdir(dir);
	ktap_result(checks_passed(), "missing_ksm_and_missing_files");
}

int main(void)
{
	static const char *const names[] = {
		"json_snapshot_matches_the_kernel",
		"text_screen_matches_the_kernel",
		"rates_over_an_interval",
		"content_intact",
		"missing_ksm_and_missing_files",
	};
	long merging = 0;
	char replies[KIDS];

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (access(KSMTOP, X_OK))
		return ktap_skip_all(names, ARRAY_SIZE(names), "no " KSMTOP);
	if (ksm_reset())
		return ktap_skip_all(names, ARRAY_SIZE(names), "no KSM");
	if (!access(CGROUP_ROOT "/cgroup.controllers", F_OK)) {
		in_cgroup = !mkdir(CG, 0755) || errno == EEXIST;
		if (!in_cgroup)
			ktap_diag("cannot create %s: %s", CG, strerror(errno));
	}
	for (int i = 0; i < KIDS; i++)
		merging += a_pages[i] + b_pages[i];
	if (kids_start(&k, KIDS, kid_main, NULL) || !kids_collect(&k, replies))
		return ktap_skip_all(names, ARRAY_SIZE(names), "fork");
	if (!ksm_wait_counts(2, merging - 2, 0, 0))
		ktap_diag("not merged: pages_shared %ld, pages_sharing %ld",
			  ksm_read("pages_shared"), ksm_read("pages_sharing"));
	test_json();
	test_text();
	test_rates();
	test_content();
	kids_send(&k, 'q');
	kids_wait(&k);
	if (in_cgroup)
		rmdir(CG);
	test_degrade();
	return ktap_finish();
}

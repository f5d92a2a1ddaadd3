// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_abi_trace.c - the ksm tracepoints (include/trace/events/ksm.h) seen
 * through tracefs: a child process (entered at fork, as its parent keeps a
 * mergeable page so that ksmd keeps scanning) that madvises, gets pages
 * merged and exits leaves ksm_enter and ksm_exit for its mm,
 * ksm_merge_with_ksm_page and ksm_merge_one_page (mainline emits the
 * latter only when it maps the zero page, so the child has zero-filled
 * pages and use_zero_pages is on)
 * with its mm and no error, and ksmd leaves ksm_start_scan/ksm_stop_scan.
 * Skipped without tracefs or without events/ksm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define TRACEFS "/sys/kernel/tracing"
#define PAGES 16	/* half zeroes, half copies of one page */

static const char *const events[] = {
	"ksm_start_scan", "ksm_stop_scan", "ksm_enter", "ksm_exit",
	"ksm_merge_one_page", "ksm_merge_with_ksm_page",
};
#define NR_EVENTS (sizeof(events) / sizeof(events[0]))

static int trace_write(const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), TRACEFS "/%s", file);
	return write_file_trunc(path, val);
}

static int enable_event(const char *event, const char *val)
{
	char file[128];

	snprintf(file, sizeof(file), "events/ksm/%s/enable", event);
	return trace_write(file, val);
}

static bool have_tracefs(void)
{
	if (!access(TRACEFS "/trace", F_OK))
		return true;
	mount("nodev", TRACEFS, "tracefs", 0, NULL);
	return !access(TRACEFS "/trace", F_OK);
}

static bool child_merged(void *arg)
{
	return self_merging_pages() == PAGES / 2 &&
	       ksm_stat(0, "ksm_zero_pages") == PAGES / 2;
}

/* The child: zeroes and copies, madvised; exits once all are merged. */
static int child(void)
{
	char *p = map_pages(PAGES);

	for (int i = PAGES / 2; i < PAGES; i++)
		fill_pattern(p + i * page_size, 0x7ace, 0);
	if (merge_pages(p, PAGES))
		return 2;
	if (!ksm_wait_until(child_merged, NULL, 20))
		return 1;
	for (int i = PAGES / 2; i < PAGES; i++)
		if (!holds_pattern(p + i * page_size, 0x7ace, 0))
			return 1;
	return 0;
}

struct seen {
	int count[NR_EVENTS];
	char mm[64];		/* the child's mm, from its ksm_exit */
	bool enter_mm, merge_mm, one_mm;
};

/* The value after "mm " in @line: hashed pointers, compared as text. */
static void mm_of(const char *line, char *mm, size_t size)
{
	const char *s = strstr(line, "mm ");

	mm[0] = '\0';
	if (s)
		sscanf(s + 3, "%63[0-9a-fx]", mm);
	(void)size;
}

static void read_trace(struct seen *s)
{
	char line[512], mm[64];
	FILE *f = fopen(TRACEFS "/trace", "r");

	memset(s, 0, sizeof(*s));
	if (!f)
		return;
	/*
	 * First pass: the child's mm, from ksm_exit, the only exit while
	 * tracing. Not from ksm_enter's pid: the parent is registered, so
	 * fork() entered the child (mainline's ksm_fork()) in its context.
	 */
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " ksm_exit: "))
			mm_of(line, s->mm, sizeof(s->mm));
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		for (size_t i = 0; i < NR_EVENTS; i++) {
			char tag[64];

			snprintf(tag, sizeof(tag), " %s: ", events[i]);
			if (!strstr(line, tag))
				continue;
			s->count[i]++;
			mm_of(line, mm, sizeof(mm));
			if (!s->mm[0] || strcmp(mm, s->mm))
				continue;
			if (!strcmp(events[i], "ksm_enter"))
				s->enter_mm = true;
			if (!strcmp(events[i], "ksm_merge_with_ksm_page") &&
			    strstr(line, "error 0"))
				s->merge_mm = true;
			if (!strcmp(events[i], "ksm_merge_one_page") &&
			    strstr(line, "error 0"))
				s->one_mm = true;
		}
	}
	fclose(f);
}

int main(void)
{
	struct seen s;
	char *keepalive;
	int status = -1;
	pid_t pid;

	ksm_save_settings();
	ktap_plan(1);
	if (!have_tracefs() || access(TRACEFS "/events/ksm", F_OK)) {
		ktap_skip_named("tracepoints_of_a_merging_child",
				"no tracefs or no events/ksm");
		return ktap_finish();
	}
	CHECK(ksm_reset() == 0, "reset");
	/*
	 * A unique page of ours, not inherited, keeps ksmd scanning once the
	 * child has gone.
	 */
	keepalive = map_pages(1);
	fill_page(keepalive, 0, 0x7acf);
	madvise(keepalive, page_size, MADV_DONTFORK);
	CHECK(merge_pages(keepalive, 1) == 0, "madvise");
	/* Not too many scan events: they must not push the others out. */
	CHECK(ksm_write("sleep_millisecs", 20) == 0, "sleep_millisecs");
	CHECK(ksm_write("use_zero_pages", 1) == 0, "use_zero_pages=1");
	CHECK(trace_write("tracing_on", "0") == 0, "tracing_on=0");
	CHECK(trace_write("trace", "") == 0, "clear trace");
	for (size_t i = 0; i < NR_EVENTS; i++)
		CHECK(enable_event(events[i], "1") == 0, "enable %s", events[i]);
	CHECK(trace_write("tracing_on", "1") == 0, "tracing_on=1");

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child());
	CHECK(pid > 0, "fork");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "child status %#x", status);
	CHECK(ksm_wait_scans(1), "a scan after the exit");
	trace_write("tracing_on", "0");
	read_trace(&s);
	for (size_t i = 0; i < NR_EVENTS; i++) {
		ktap_diag("%s: %d", events[i], s.count[i]);
		CHECK(s.count[i] > 0, "no %s", events[i]);
	}
	CHECK(s.mm[0], "no ksm_exit with an mm");
	CHECK(s.enter_mm, "no ksm_enter for the child's mm %s", s.mm);
	CHECK(s.merge_mm, "no ksm_merge_with_ksm_page, error 0, for mm %s", s.mm);
	CHECK(s.one_mm, "no ksm_merge_one_page, error 0, for mm %s", s.mm);
	for (size_t i = 0; i < NR_EVENTS; i++)
		enable_event(events[i], "0");
	trace_write("trace", "");
	trace_write("tracing_on", "1");
	ktap_result(checks_passed(), "tracepoints_of_a_merging_child");
	return ktap_finish();
}

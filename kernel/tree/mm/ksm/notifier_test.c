// SPDX-License-Identifier: GPL-2.0
/*
 * Test driver for the change_pte MMU notifier, built only with
 * CONFIG_KSM_NOTIFIER_TEST.
 *
 * /proc/ksm_notifier_test: each open file is a session. Writing "start"
 * subscribes two notifiers to the writer's mm: A implements change_pte
 * and invalidate_range_start/end, B only invalidate_range_start/end.
 * "stop" unsubscribes them (so does closing the file), "clear" empties
 * the log. Reading the file lists what both received, oldest first:
 *
 *   events <logged> lost <overwritten>
 *   A start 0x<start>-0x<end> event=<mmu_notifier_event>
 *   A change_pte 0x<addr> pfn=0x<pfn> write=<0|1>
 *   A end 0x<start>-0x<end>
 *   B start 0x<start>-0x<end> event=<mmu_notifier_event>
 *   B end 0x<start>-0x<end>
 *   A release / B release
 *
 * The callbacks run under page table locks and must not sleep: events
 * go to a fixed ring under a spinlock, the oldest overwritten when full.
 */
#include <linux/init.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#define NT_RING 4096

enum nt_kind { NT_START, NT_END, NT_CHANGE, NT_RELEASE };

struct nt_event {
	unsigned long start;	/* range start, or change_pte's address */
	unsigned long end;	/* range end, or the new PTE's pfn */
	u8 who;			/* 'A' or 'B' */
	u8 kind;		/* enum nt_kind */
	u8 arg;			/* range event, or change_pte's write bit */
};

struct nt_session {
	struct mmu_notifier a, b;
	struct mm_struct *mm;	/* subscribed to, or NULL; under @lock */
	struct mutex lock;	/* start and stop */
	spinlock_t log_lock;	/* the ring */
	unsigned int first;	/* index of the oldest event */
	unsigned int count;	/* events in the ring */
	unsigned long lost;	/* events overwritten */
	struct nt_event ring[NT_RING];
};

static void nt_log(struct nt_session *s, u8 who, u8 kind, unsigned long start,
		   unsigned long end, u8 arg)
{
	struct nt_event *ev;
	unsigned long flags;

	spin_lock_irqsave(&s->log_lock, flags);
	if (s->count == NT_RING) {
		s->first = (s->first + 1) % NT_RING;
		s->count--;
		s->lost++;
	}
	ev = &s->ring[(s->first + s->count) % NT_RING];
	s->count++;
	ev->who = who;
	ev->kind = kind;
	ev->start = start;
	ev->end = end;
	ev->arg = arg;
	spin_unlock_irqrestore(&s->log_lock, flags);
}

static void nt_a_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	nt_log(container_of(mn, struct nt_session, a), 'A', NT_RELEASE,
	       0, 0, 0);
}

static void nt_b_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	nt_log(container_of(mn, struct nt_session, b), 'B', NT_RELEASE,
	       0, 0, 0);
}

static int nt_a_start(struct mmu_notifier *mn,
		      const struct mmu_notifier_range *range)
{
	nt_log(container_of(mn, struct nt_session, a), 'A', NT_START,
	       range->start, range->end, range->event);
	return 0;
}

static void nt_a_end(struct mmu_notifier *mn,
		     const struct mmu_notifier_range *range)
{
	nt_log(container_of(mn, struct nt_session, a), 'A', NT_END,
	       range->start, range->end, range->event);
}

static void nt_a_change_pte(struct mmu_notifier *mn, struct mm_struct *mm,
			    unsigned long address, pte_t pte)
{
	nt_log(container_of(mn, struct nt_session, a), 'A', NT_CHANGE,
	       address, pte_pfn(pte), pte_write(pte) ? 1 : 0);
}

static int nt_b_start(struct mmu_notifier *mn,
		      const struct mmu_notifier_range *range)
{
	nt_log(container_of(mn, struct nt_session, b), 'B', NT_START,
	       range->start, range->end, range->event);
	return 0;
}

static void nt_b_end(struct mmu_notifier *mn,
		     const struct mmu_notifier_range *range)
{
	nt_log(container_of(mn, struct nt_session, b), 'B', NT_END,
	       range->start, range->end, range->event);
}

/* A: a secondary MMU that wants to hear of new PTEs. */
static const struct mmu_notifier_ops nt_ops_a = {
	.release = nt_a_release,
	.invalidate_range_start = nt_a_start,
	.invalidate_range_end = nt_a_end,
	.change_pte = nt_a_change_pte,
};

/* B: one that does not, and must see only the invalidations. */
static const struct mmu_notifier_ops nt_ops_b = {
	.release = nt_b_release,
	.invalidate_range_start = nt_b_start,
	.invalidate_range_end = nt_b_end,
};

static int nt_start(struct nt_session *s)
{
	struct mm_struct *mm = current->mm;
	int err;

	if (!mm)
		return -EINVAL;
	mutex_lock(&s->lock);
	err = -EBUSY;
	if (s->mm)
		goto out;
	s->a.ops = &nt_ops_a;
	s->b.ops = &nt_ops_b;
	err = mmu_notifier_register(&s->a, mm);
	if (err)
		goto out;
	err = mmu_notifier_register(&s->b, mm);
	if (err) {
		mmu_notifier_unregister(&s->a, mm);
		goto out;
	}
	s->mm = mm;
out:
	mutex_unlock(&s->lock);
	return err;
}

/* Also after the mm exited: the subscriptions keep it from being freed. */
static void nt_stop(struct nt_session *s)
{
	mutex_lock(&s->lock);
	if (s->mm) {
		mmu_notifier_unregister(&s->b, s->mm);
		mmu_notifier_unregister(&s->a, s->mm);
		s->mm = NULL;
	}
	mutex_unlock(&s->lock);
}

static int nt_show(struct seq_file *m, void *v)
{
	static const char * const kind[] = {
		[NT_START] = "start", [NT_END] = "end",
		[NT_CHANGE] = "change_pte", [NT_RELEASE] = "release",
	};
	struct nt_session *s = m->private;
	unsigned long flags;
	unsigned int i;

	/* seq_file retries with a larger buffer if this overflows. */
	spin_lock_irqsave(&s->log_lock, flags);
	seq_printf(m, "events %u lost %lu\n", s->count, s->lost);
	for (i = 0; i < s->count; i++) {
		const struct nt_event *ev = &s->ring[(s->first + i) % NT_RING];

		seq_printf(m, "%c %s", ev->who, kind[ev->kind]);
		switch (ev->kind) {
		case NT_START:
			seq_printf(m, " 0x%lx-0x%lx event=%u\n", ev->start,
				   ev->end, ev->arg);
			break;
		case NT_END:
			seq_printf(m, " 0x%lx-0x%lx\n", ev->start, ev->end);
			break;
		case NT_CHANGE:
			seq_printf(m, " 0x%lx pfn=0x%lx write=%u\n", ev->start,
				   ev->end, ev->arg);
			break;
		default:
			seq_putc(m, '\n');
		}
	}
	spin_unlock_irqrestore(&s->log_lock, flags);
	return 0;
}

static int nt_open(struct inode *inode, struct file *file)
{
	struct nt_session *s = kvzalloc(sizeof(*s), GFP_KERNEL);
	int err;

	if (!s)
		return -ENOMEM;
	mutex_init(&s->lock);
	spin_lock_init(&s->log_lock);
	err = single_open(file, nt_show, s);
	if (err)
		kvfree(s);
	return err;
}

static int nt_release(struct inode *inode, struct file *file)
{
	struct nt_session *s = ((struct seq_file *)file->private_data)->private;

	nt_stop(s);
	single_release(inode, file);
	kvfree(s);
	return 0;
}

static ssize_t nt_write(struct file *file, const char __user *ubuf,
			size_t len, loff_t *ppos)
{
	struct nt_session *s = ((struct seq_file *)file->private_data)->private;
	char buf[16];
	char *cmd;
	int err = 0;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	cmd = strim(buf);
	if (!strcmp(cmd, "start")) {
		err = nt_start(s);
	} else if (!strcmp(cmd, "stop")) {
		nt_stop(s);
	} else if (!strcmp(cmd, "clear")) {
		unsigned long flags;

		spin_lock_irqsave(&s->log_lock, flags);
		s->first = 0;
		s->count = 0;
		s->lost = 0;
		spin_unlock_irqrestore(&s->log_lock, flags);
	} else {
		err = -EINVAL;
	}
	return err ? err : len;
}

static const struct proc_ops nt_proc_ops = {
	.proc_open = nt_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_write = nt_write,
	.proc_release = nt_release,
};

static int __init nt_init(void)
{
	if (!proc_create("ksm_notifier_test", 0600, NULL, &nt_proc_ops))
		return -ENOMEM;
	return 0;
}
late_initcall(nt_init);

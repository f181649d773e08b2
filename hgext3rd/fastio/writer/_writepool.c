/* Close a batch of file descriptors with the GIL released once.
 *
 * A closing thread written in Python takes the GIL back after every
 * os.close(); while the main thread runs Python, each of those hand-offs
 * costs it a wake-up and a wait (measured: over a second of CPU for 10k
 * closes of 1 ms each).  close_all() closes the whole batch in C and
 * reports every failure, so no error is lost.
 *
 * Optional: writethreads.py falls back to os.close when this is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef _WIN32
#include <io.h>
#else
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#endif

/* close(fd): 0, or the errno of its failure */
static int close_fd(int fd)
{
#if defined(_WIN32)
	return _close(fd) == 0 ? 0 : errno;
#elif defined(__hpux)
	/* HP-UX leaves the descriptor open when close() is interrupted: retry,
	 * or it stays open */
	int rc;
	while ((rc = close(fd)) != 0 && errno == EINTR)
		;
	return rc == 0 ? 0 : errno;
#else
	/* Linux, the BSDs and macOS release the descriptor even when close()
	 * fails with EINTR: a retry could close one that another thread has
	 * just been given.  EINTR is a failure all the same: the flush a close
	 * does (NFS, SMB) may have been cut short.  (Our closing threads block
	 * every signal, so this is not expected.) */
	return close(fd) == 0 ? 0 : errno;
#endif
}

PyDoc_STRVAR(close_all_doc,
	     "close_all(fds) -> None or bytes\n\n"
	     "Close every descriptor of the sequence, with the GIL released "
	     "(and signals blocked, on POSIX).  None when every close "
	     "succeeded, else one native int per descriptor (array('i') "
	     "layout): the errno of its close, 0 for success.  Raises only "
	     "before it has closed anything.");

static PyObject *close_all(PyObject *self, PyObject *arg)
{
	PyObject *seq, *result;
	Py_ssize_t i, n;
	int *fds, *errs, failed = 0;
#ifndef _WIN32
	sigset_t all, old;
#endif

	seq = PySequence_Fast(arg, "close_all() takes a sequence of ints");
	if (seq == NULL)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	/* everything that can fail comes before the first close: once one
	 * descriptor is closed, raising would leak the others */
	result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int));
	fds = PyMem_Malloc((n ? n : 1) * sizeof(int));
	if (result == NULL || fds == NULL) {
		if (result != NULL)
			PyErr_NoMemory();
		goto error;
	}
	for (i = 0; i < n; i++) {
		long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
		if (fd == -1 && PyErr_Occurred())
			goto error;
		if (fd < 0 || fd > INT_MAX) {
			PyErr_SetString(PyExc_ValueError, "not a file descriptor");
			goto error;
		}
		fds[i] = (int)fd;
	}
	errs = (int *)PyBytes_AS_STRING(result);
	Py_BEGIN_ALLOW_THREADS
#ifndef _WIN32
	/* no signal handler may interrupt a close (see close_fd) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
#endif
	for (i = 0; i < n; i++) {
		errs[i] = close_fd(fds[i]);
		failed |= errs[i] != 0;
	}
#ifndef _WIN32
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
	Py_END_ALLOW_THREADS
	PyMem_Free(fds);
	Py_DECREF(seq);
	if (!failed) {
		Py_DECREF(result);
		Py_RETURN_NONE;
	}
	return result;
error:
	PyMem_Free(fds);
	Py_XDECREF(result);
	Py_DECREF(seq);
	return NULL;
}

#ifndef _WIN32
/* Pool: threads of its own that close descriptors and never take the GIL.
 *
 * Python threads closing files must take the GIL back after each batch, and
 * with tens of them (a 1 ms close needs that many to keep up with a stream
 * apply producing a file every 20 us) the hand-offs slow the main thread
 * more than the closes they spare it.  Here the main thread puts a
 * descriptor and its name in a ring of `capacity` slots (the bound on
 * pending closes) and goes on; the threads take them in order (but for
 * the creates of a directory another thread is creating in: see the
 * lanes) and record each task's errno in its slot.  The main thread frees
 * the slots (and keeps the first failure with its name) when it next
 * submits or drains.
 *
 * Wake-ups cost a system call each, so the main thread makes as few as it
 * can: it signals an idle thread only when no wake-up is already on its way
 * (the woken thread wakes the next one if more descriptors wait), and when
 * the ring is full it sleeps until an eighth of it is free, not until the
 * next close ends.
 *
 * A close can hang (a hard-mounted NFS server that stopped answering): the
 * owner then stops waiting for it (finish() with a timeout) and drops the
 * Pool.  The ring and its lock live in a Core of their own, allocated with
 * malloc() and reference-counted by the Pool and by each running thread
 * (no pool joins its threads): the last one frees it, and a hung thread simply
 * ends whenever its close returns.  Threads never touch Python objects;
 * names stay with the owner, under the GIL.
 *
 * fork(): the child has none of the threads and may have a copy of a lock
 * one of them held.  Every method checks that the Pool was made in this
 * process (a generation counter bumped by a pthread_atfork handler) and
 * raises RuntimeError in a child; a child's copy of a Core is never freed.
 *
 * POSIX threads only; on Windows writethreads.py does the work.
 */
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#define NS 1000000000LL
/* slots beyond `capacity` for descriptors submit() is interrupted with */
#define SPARE 16
/* longest wait between two checks for signals when waiting without limit */
#define STEP_S 0.1

/* what a slot asks of a thread */
enum { TASK_CLOSE, TASK_FILE, TASK_DIR };
/* the step of a task that failed (failure()'s third item) */
enum { STEP_CLOSE, STEP_CREATE, STEP_WRITE, STEP_MODE, STEP_MKDIR };

typedef struct {
	int kind;
	int fd;	  /* TASK_CLOSE */
	int err;
	int step; /* where err comes from */
	int done;
	int mode;	   /* TASK_FILE, TASK_DIR: chmod to this, or -1 */
	int lane;	   /* TASK_FILE, TASK_DIR: its parent's lane; -1 none */
	int taken;	   /* a thread runs it, or ran it */
	size_t after;	   /* 1 + seq of the TASK_DIR this waits for, or 0 */
	const char *path;  /* TASK_FILE, TASK_DIR: in `keep` */
	const char *data;  /* TASK_FILE: the content, in `view` */
	size_t len;
	PyObject *name;	   /* the owner's, under the GIL; threads never read it */
	PyObject *keep;	   /* the owner's: the path's bytes */
	Py_buffer view;	   /* the owner's: held until the slot is reclaimed */
	int has_view;
} Slot;

/* Lanes: the kernel serializes the creates, mkdirs, unlinks and renames
 * of one directory (its parent's i_rwsem, held across the lookup and the
 * create, on NFS, SMB and FUSE alike), so threads creating files in the
 * same directory wait for each other, a round trip after the other.  Every
 * new file and directory belongs to the lane of its parent directory (a
 * hash of the parent's path: two directories sharing a lane merely take
 * turns), and at most one thread creates in a lane at a time; the others
 * take the next task of another directory.  A lane is held only across
 * the create (or mkdir): the write and the close, which the kernel does
 * not serialize, overlap as before. */
#define LANES 1024

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a slot was filled, or stopping */
	pthread_cond_t room; /* a close finished, or a thread ended */
	Slot *slots;
	size_t capacity;  /* pending closes submit() waits below */
	size_t ring;	  /* pending tasks of any kind, the same for all */
	size_t nslots;	  /* ring + SPARE */
	size_t closes;	  /* close tasks queued and not finished */
	size_t head;	  /* slots filled so far */
	size_t low;	  /* slots below it are all taken by threads */
	size_t untaken;	  /* slots filled and not taken */
	size_t reclaim;	  /* slots freed by the owner */
	size_t completed; /* closes finished */
	size_t peak;
	int waiting; /* the owner waits on `room` */
	size_t wake_at; /* ... until this few tasks are pending */
	long close_wake_at; /* ... or this few closes (-1: not for closes) */
	int idle;	/* threads waiting on `work` */
	int waking;	/* `work` signalled, no thread woke yet */
	int stopping;
	int running; /* threads started and not ended */
	int peak_running;
	int maxthreads;
	int refs; /* the Pool (until freed) and each running thread */
	unsigned long generation; /* fork_generation when it was made */
	size_t bytes;  /* content of the file tasks queued, not reclaimed */
	size_t peak_bytes;
	size_t budget; /* submit_files() waits above this many bytes */
	int failed;    /* a file or directory task failed: skip the others */
	size_t blocked; /* tasks the filesystem kept waiting, since the last
			 * thread added on the owner's request */
	size_t waited;	/* ... in all */
	unsigned char creating[LANES]; /* a thread creates in this lane */
} Core;

typedef struct {
	PyObject_HEAD
	Core *core;
	PyObject *interrupted; /* callable submit() asks while it waits */
	PyObject *failure_name; /* first failure */
	int failure_errno;
	int failure_step;
	long long wait_ns; /* time submit() spent waiting for room */
} Pool;

/* bumped in the child of every fork() */
static volatile unsigned long fork_generation;
static int atfork_registered;

/* The threads' stacks.  glibc caches the stack of every thread that ends
 * (up to 40 MiB: 157 stacks of 256 KiB, two mappings each) for the next
 * thread, and a long-running process kept as many as it ever ran at once.
 * A stack given with pthread_attr_setstack is never cached: each thread
 * runs on a mapping of ours, unmapped once the thread is joined.  No pool
 * joins its own threads (one whose close hangs may outlive it): a thread
 * that ends marks its record, and the next pool made, finished or dropped
 * in the process joins every marked thread and unmaps its stack. */
#define STACK_SIZE (256 * 1024)

typedef struct Thread {
	pthread_t thread;
	char *stack; /* the mapping: a guard page, then the stack */
	size_t size;
	int ended;   /* it touches nothing more: join it */
	Core *core;
	struct Thread *next;
} Thread;

static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
/* threads started and not joined yet */
static Thread *threads;

/* join the threads that have ended, unmap their stacks; GIL held (a
 * marked thread only returns: a join waits for nothing else) */
static void reap_threads(void)
{
	Thread **link, *t, *ended = NULL;
	pthread_mutex_lock(&threads_mu);
	for (link = &threads; (t = *link) != NULL;) {
		if (t->ended) {
			*link = t->next;
			t->next = ended;
			ended = t;
		} else {
			link = &t->next;
		}
	}
	pthread_mutex_unlock(&threads_mu);
	while ((t = ended) != NULL) {
		ended = t->next;
		pthread_join(t->thread, NULL);
		munmap(t->stack, t->size);
		free(t);
	}
}

static void after_fork_in_child(void)
{
	fork_generation++;
	/* the parent's threads are not here: never joined from here (their
	 * records and stacks are left), and the lock may have been held */
	threads = NULL;
	pthread_mutex_init(&threads_mu, NULL);
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * NS + ts.tv_nsec;
}

/* conditions measure their deadlines on the monotonic clock: a change of
 * the wall clock neither cuts a wait short nor makes it endless */
static int cond_init(pthread_cond_t *cond)
{
#ifdef __APPLE__
	return pthread_cond_init(cond, NULL);
#else
	pthread_condattr_t attr;
	int rc;
	pthread_condattr_init(&attr);
	rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return rc;
#endif
}

/* wait on `cond` until `deadline` (now_ns() time) at the latest */
static int cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu,
			   long long deadline)
{
#ifdef __APPLE__
	/* macOS has no pthread_condattr_setclock: a relative wait instead
	 * (not compiled on the development machine) */
	struct timespec rel;
	long long left = deadline - now_ns();
	if (left <= 0)
		return ETIMEDOUT;
	rel.tv_sec = left / NS;
	rel.tv_nsec = left % NS;
	return pthread_cond_timedwait_relative_np(cond, mu, &rel);
#else
	struct timespec ts;
	ts.tv_sec = deadline / NS;
	ts.tv_nsec = deadline % NS;
	return pthread_cond_timedwait(cond, mu, &ts);
#endif
}

static void core_free(Core *c)
{
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->room);
	free(c->slots);
	free(c);
}

/* a task that left its thread waiting this long (ns) for the filesystem
 * is one that more threads can overlap */
#define GROW_BLOCKED_NS 50000LL

static int pool_start_thread(Core *c, int stopping_too);

/* how often this thread has gone to sleep (blocked in a system call): a
 * task that took long and slept waited for the filesystem; one that was
 * merely preempted (a busy machine) did not */
static long thread_sleeps(void)
{
#ifdef RUSAGE_THREAD
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) == 0)
		return ru.ru_nvcsw;
#endif
	return 0;
}

/* a task is done: reclaimed, or marked so; mutex held */
static int task_done(Core *c, size_t seq)
{
	return seq < c->reclaim || c->slots[seq % c->nslots].done;
}

static void lane_release(Core *c, int lane);

/* create, fill and close one new file; 0 or errno, `*step` says where;
 * the lane is given back once the file exists */
static int write_file(Core *c, int lane, const char *path, const char *data,
		      size_t len, int mode, int *step)
{
	int fd, err = 0;
	*step = STEP_CREATE;
	/* newfile.FLAGS: the Python creator's flags */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	err = fd < 0 ? errno : 0;
	lane_release(c, lane);
	if (fd < 0)
		return err;
	if (mode >= 0 && fchmod(fd, (mode_t)mode) != 0) {
		err = errno;
		*step = STEP_MODE;
	}
	while (!err && len) {
		ssize_t n = write(fd, data, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			*step = STEP_WRITE;
			break;
		}
		data += n;
		len -= (size_t)n;
	}
	if (close_fd(fd) != 0 && !err) {
		err = errno;
		*step = STEP_CLOSE;
	}
	return err;
}

/* make one directory (its parent exists: its task came first); the lane
 * is given back once it exists */
static int make_dir(Core *c, int lane, const char *path, int mode, int *step)
{
	struct stat st;
	int rc, err;
	*step = STEP_MKDIR;
	rc = mkdir(path, 0777);
	err = errno;
	lane_release(c, lane);
	if (rc != 0) {
		/* made meanwhile by someone else: a directory is all we need */
		if (err != EEXIST || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			return err;
	}
	if (mode >= 0 && chmod(path, (mode_t)mode) != 0) {
		*step = STEP_MODE;
		return errno;
	}
	return 0;
}

/* wake an idle thread when there is work and no wake-up on its way;
 * mutex held */
static void wake_one(Core *c)
{
	if (c->idle && !c->waking && c->untaken) {
		c->waking = 1;
		pthread_cond_signal(&c->work);
	}
}

/* the lane's create is done: a thread may create there again.  Without
 * waiting for the mutex: a thread that waited here would count as one the
 * filesystem kept waiting (and on a busy machine the holder may be
 * preempted); when the mutex is busy, its holder or this thread, after its
 * task, takes the lane's next task */
static void lane_release(Core *c, int lane)
{
	if (lane < 0)
		return;
	__atomic_store_n(&c->creating[lane], 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&c->idle, __ATOMIC_RELAXED) &&
	    pthread_mutex_trylock(&c->mu) == 0) {
		wake_one(c);
		pthread_mutex_unlock(&c->mu);
	}
}

/* the first task a thread may take, or c->head: not taken, its directory
 * made, no thread creating in its lane (tasks of one lane are taken in
 * their order: the first of a free lane comes first); mutex held */
static size_t next_task(Core *c)
{
	size_t seq;
	while (c->low < c->head && c->slots[c->low % c->nslots].taken)
		c->low++;
	if (!c->untaken)
		return c->head;
	for (seq = c->low; seq < c->head; seq++) {
		Slot *s = &c->slots[seq % c->nslots];
		if (s->taken ||
		    (s->lane >= 0 &&
		     __atomic_load_n(&c->creating[s->lane], __ATOMIC_ACQUIRE)) ||
		    (s->after && !task_done(c, s->after - 1)))
			continue;
		return seq;
	}
	return c->head;
}

static void *pool_worker(void *arg)
{
	Thread *self = arg;
	Core *c = self->core;
	int last;
#ifdef SCHED_BATCH
	/* a close that ends must not preempt the thread producing the files:
	 * the batch policy turns wake-up preemption off (no privilege needed) */
	struct sched_param param = {0};
	pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
#endif
	pthread_mutex_lock(&c->mu);
	for (;;) {
		size_t seq;
		int err, step = STEP_CLOSE, kind, skip, lane;
		long long began, took;
		long sleeps;
		int slept;
		Slot *s;
		/* (stopping: the tasks left are all taken, or wait for a lane
		 * or a directory that a running thread will give) */
		while ((seq = next_task(c)) == c->head &&
		       !(c->stopping && !c->untaken)) {
			c->idle++;
			pthread_cond_wait(&c->work, &c->mu);
			c->idle--;
			c->waking = 0;
		}
		if (seq == c->head)
			break;
		s = &c->slots[seq % c->nslots];
		s->taken = 1;
		c->untaken--;
		kind = s->kind;
		/* after a failure the operation is aborting: create nothing more
		 * (a descriptor handed over is closed all the same) */
		skip = kind != TASK_CLOSE && c->failed;
		lane = skip || kind == TASK_CLOSE ? -1 : s->lane;
		if (lane >= 0)
			__atomic_store_n(&c->creating[lane], 1, __ATOMIC_RELAXED);
		/* wake the next thread from here, not from the producer; when
		 * stopping, the last task taken lets the idle threads end */
		if (c->stopping && !c->untaken)
			pthread_cond_broadcast(&c->work);
		else
			wake_one(c);
		pthread_mutex_unlock(&c->mu);
		began = now_ns();
		sleeps = thread_sleeps();
		if (skip)
			err = ECANCELED;
		else if (kind == TASK_CLOSE)
			err = close_fd(s->fd);
		else if (kind == TASK_FILE)
			err = write_file(c, lane, s->path, s->data, s->len,
					 s->mode, &step);
		else
			err = make_dir(c, lane, s->path, s->mode, &step);
		took = now_ns() - began;
		slept = thread_sleeps() != sleeps;
		pthread_mutex_lock(&c->mu);
		/* the filesystem kept this thread waiting (it slept: a
		 * preempted thread on a busy machine did not) while tasks it
		 * could take queue up and no thread is free: one more (a fast
		 * filesystem never does) */
		if (slept && took > GROW_BLOCKED_NS) {
			c->blocked++;
			c->waited++;
			if (!c->idle && next_task(c) != c->head)
				pool_start_thread(c, 1);
		}
		s->err = err;
		s->step = skip ? -1 : step;
		s->done = 1;
		c->completed++;
		if (kind == TASK_CLOSE)
			c->closes--;
		else if (err && !skip)
			c->failed = 1;
		/* its files may be taken now */
		if (kind == TASK_DIR)
			wake_one(c);
		if (c->waiting && (c->head - c->completed <= c->wake_at ||
				   (long)c->closes <= c->close_wake_at))
			pthread_cond_signal(&c->room);
	}
	/* (marked before the count drops: a finish() that sees none running
	 * joins them all) */
	pthread_mutex_lock(&threads_mu);
	self->ended = 1;
	pthread_mutex_unlock(&threads_mu);
	c->running--;
	last = --c->refs == 0;
	if (c->waiting)
		pthread_cond_signal(&c->room);
	pthread_mutex_unlock(&c->mu);
	if (last)
		core_free(c);
	return NULL;
}

/* the Pool is usable here: made in this process, not finalized */
static int pool_check(Pool *p)
{
	if (p->core == NULL) {
		PyErr_SetString(PyExc_ValueError, "pool is not initialized");
		return -1;
	}
	if (p->core->generation != fork_generation) {
		PyErr_SetString(PyExc_RuntimeError,
				"pool of the parent process used after fork()");
		return -1;
	}
	return 0;
}

/* drop what the owner kept for a slot; GIL held */
static void slot_release(Core *c, Slot *s)
{
	s->name = NULL;
	s->done = 0;
	Py_CLEAR(s->keep);
	if (s->has_view) {
		c->bytes -= s->len;
		PyBuffer_Release(&s->view);
		s->has_view = 0;
	}
	s->path = s->data = NULL;
	s->len = 0;
	s->after = 0;
}

/* free the finished slots at the front; mutex and GIL held */
static void pool_reclaim(Pool *p)
{
	Core *c = p->core;
	while (c->reclaim < c->head) {
		Slot *s = &c->slots[c->reclaim % c->nslots];
		if (!s->done)
			break;
		/* a skipped task (step -1) is not the failure: one came first */
		if (s->err && s->step >= 0 && p->failure_name == NULL) {
			p->failure_name = s->name;
			p->failure_errno = s->err;
			p->failure_step = s->step;
		} else {
			Py_XDECREF(s->name);
		}
		slot_release(c, s);
		c->reclaim++;
	}
}

/* one more thread, unless at the maximum or stopping (a thread of the
 * pool may add one while it stops: the queue is not empty); mutex held; 0
 * or pthread_create's error */
static int pool_start_thread(Core *c, int stopping_too)
{
	sigset_t all, old;
	pthread_attr_t attr;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	Thread *t;
	int rc;
	if (c->running >= c->maxthreads || (c->stopping && !stopping_too))
		return 0;
	t = calloc(1, sizeof(Thread));
	if (t == NULL)
		return ENOMEM;
	/* a close needs little stack: tens of threads, not tens of 8 MB maps;
	 * a guard page below it, as glibc's own stacks have */
	t->size = STACK_SIZE + page;
	t->stack = mmap(NULL, t->size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANON
#ifdef MAP_STACK
				| MAP_STACK
#endif
			,
			-1, 0);
	if (t->stack == MAP_FAILED) {
		rc = errno;
		free(t);
		return rc;
	}
	if (mprotect(t->stack, page, PROT_NONE) != 0) {
		rc = errno;
		munmap(t->stack, t->size);
		free(t);
		return rc;
	}
	t->core = c;
	/* signals go to the main thread (Python handles them there), never
	 * interrupt a close here: the new thread inherits this mask */
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, t->stack + page, STACK_SIZE);
	c->running++;
	if (c->running > c->peak_running)
		c->peak_running = c->running;
	c->refs++;
	/* (listed before it runs: it marks itself there when it ends) */
	pthread_mutex_lock(&threads_mu);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&t->thread, &attr, pool_worker, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0) {
		t->next = threads;
		threads = t;
	}
	pthread_mutex_unlock(&threads_mu);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		c->running--;
		c->refs--;
		munmap(t->stack, t->size);
		free(t);
	}
	return rc;
}

static PyObject *pool_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"capacity", "threads", "max_threads",
				 "interrupted", "budget", "ring", NULL};
	Py_ssize_t capacity, budget = 64 << 20, ring = 0;
	int threads, maxthreads, i, rc = 0;
	PyObject *interrupted = Py_None;
	Pool *p;
	Core *c;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "nii|Onn", kwlist, &capacity,
					 &threads, &maxthreads, &interrupted,
					 &budget, &ring))
		return NULL;
	if (capacity < 1 || threads < 1 || maxthreads < threads) {
		PyErr_SetString(PyExc_ValueError, "bad pool size");
		return NULL;
	}
	if (interrupted != Py_None && !PyCallable_Check(interrupted)) {
		PyErr_SetString(PyExc_TypeError, "interrupted must be callable");
		return NULL;
	}
	p = (Pool *)type->tp_alloc(type, 0);
	if (p == NULL)
		return NULL;
	if (interrupted != Py_None) {
		Py_INCREF(interrupted);
		p->interrupted = interrupted;
	}
	/* malloc, not PyMem: the last thread may free it without the GIL */
	c = calloc(1, sizeof(Core));
	if (c != NULL)
		c->slots = calloc((ring > capacity ? ring : capacity) + SPARE,
				  sizeof(Slot));
	if (c == NULL || c->slots == NULL) {
		free(c);
		Py_DECREF(p);
		return PyErr_NoMemory();
	}
	c->capacity = capacity;
	c->ring = ring > capacity ? ring : capacity;
	c->budget = budget > 0 ? (size_t)budget : 1;
	c->nslots = c->ring + SPARE;
	c->maxthreads = maxthreads;
	c->refs = 1;
	c->generation = fork_generation;
	if (pthread_mutex_init(&c->mu, NULL) != 0 || cond_init(&c->work) != 0 ||
	    cond_init(&c->room) != 0) {
		/* (never seen: these allocate nothing on Linux) */
		free(c->slots);
		free(c);
		Py_DECREF(p);
		return PyErr_NoMemory();
	}
	p->core = c;
	/* (the threads of the pools before, whose stacks this one can use) */
	reap_threads();
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < threads && rc == 0; i++)
		rc = pool_start_thread(c, 0);
	pthread_mutex_unlock(&c->mu);
	if (rc != 0) {
		errno = rc;
		PyErr_SetFromErrno(PyExc_OSError);
		Py_DECREF(p);
		return NULL;
	}
	return (PyObject *)p;
}

static void pool_dealloc(Pool *p)
{
	Core *c = p->core;
	size_t seq;
	int last;
	if (c != NULL && c->generation == fork_generation) {
		pthread_mutex_lock(&c->mu);
		/* the owner is gone: queued files and directories are not made;
		 * descriptors are still closed */
		c->failed = 1;
		for (seq = c->reclaim; seq < c->head; seq++) {
			Slot *s = &c->slots[seq % c->nslots];
			Py_CLEAR(s->name);
			/* a path or content a thread may be using stays (leaked:
			 * only an abandoned, hung task leaves one) */
			if (s->done)
				slot_release(c, s);
		}
		/* threads close what is queued, then end; the last frees it */
		c->stopping = 1;
		pthread_cond_broadcast(&c->work);
		last = --c->refs == 0;
		pthread_mutex_unlock(&c->mu);
		if (last)
			core_free(c);
		reap_threads();
	}
	/* (in a forked child the copy of the Core is left alone: its lock
	 * may have been held by a thread that does not exist here) */
	Py_XDECREF(p->interrupted);
	Py_XDECREF(p->failure_name);
	Py_TYPE(p)->tp_free((PyObject *)p);
}

/* wait on `room` until `deadline`; mutex held, GIL released and taken back
 * without the mutex (no lock-order inversion) */
static int pool_wait(Core *c, size_t wake_at, long close_wake_at,
		     long long deadline)
{
	int rc;
	c->wake_at = wake_at;
	c->close_wake_at = close_wake_at;
	c->waiting = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = cond_wait_until(&c->room, &c->mu, deadline);
	pthread_mutex_unlock(&c->mu);
	Py_END_ALLOW_THREADS
	pthread_mutex_lock(&c->mu);
	c->waiting = 0;
	return rc;
}

/* 1 if the owner's interrupted() says so, -1 if it raised */
static int pool_interrupted(Pool *p)
{
	PyObject *r;
	int yes;
	if (p->interrupted == NULL)
		return 0;
	r = PyObject_CallObject(p->interrupted, NULL);
	if (r == NULL)
		return -1;
	yes = PyObject_IsTrue(r);
	Py_DECREF(r);
	return yes;
}

PyDoc_STRVAR(submit_doc,
	     "submit(fd, name) -> flags\n\n"
	     "Queue fd to be closed; name is kept for an error message.  Waits "
	     "while `capacity` closes are pending, checking for signals every "
	     "0.1 s.  Flags: 1 it had to wait, 2 a close has failed (see "
	     "failure()), 4 interrupted() said so while it waited: fd was "
	     "queued beyond capacity.  If a signal handler raises while it "
	     "waits, fd is queued all the same and the exception propagates.");

static PyObject *pool_submit(Pool *p, PyObject *args)
{
	int fd, flags = 0, raised = 0;
	PyObject *name;
	Slot *s;
	Core *c;
	long long start = 0;
	if (!PyArg_ParseTuple(args, "iO", &fd, &name) || pool_check(p) < 0)
		return NULL;
	c = p->core;
	if (c->stopping) {
		PyErr_SetString(PyExc_ValueError, "pool is finished");
		return NULL;
	}
	pthread_mutex_lock(&c->mu);
	pool_reclaim(p);
	while (c->closes >= c->capacity || c->head - c->reclaim >= c->ring) {
		int stop;
		if (!(flags & 1)) {
			flags |= 1;
			start = now_ns();
		}
		/* back when an eighth is free, not at each close */
		pool_wait(c, c->ring - (c->ring >= 8 ? c->ring / 8 : 1),
			  (long)(c->capacity -
				 (c->capacity >= 8 ? c->capacity / 8 : 1)),
			  now_ns() + (long long)(STEP_S * NS));
		pool_reclaim(p);
		if (c->closes < c->capacity && c->head - c->reclaim < c->ring)
			break;
		pthread_mutex_unlock(&c->mu);
		stop = PyErr_CheckSignals() < 0 ? -1 : pool_interrupted(p);
		pthread_mutex_lock(&c->mu);
		if (stop < 0)
			raised = 1;
		else if (stop)
			flags |= 4;
		if (stop)
			break;
	}
	if (flags & 1)
		p->wait_ns += now_ns() - start;
	if (c->head - c->reclaim >= c->nslots) {
		/* interrupted that often with every close hanging: close it
		 * here rather than lose it */
		int err;
		pthread_mutex_unlock(&c->mu);
		Py_BEGIN_ALLOW_THREADS
		err = close_fd(fd);
		Py_END_ALLOW_THREADS
		if (err && p->failure_name == NULL) {
			Py_INCREF(name);
			p->failure_name = name;
			p->failure_errno = err;
		}
		return raised ? NULL : PyLong_FromLong(flags);
	}
	s = &c->slots[c->head % c->nslots];
	c->closes++;
	s->kind = TASK_CLOSE;
	s->fd = fd;
	s->err = 0;
	s->done = 0;
	s->lane = -1;
	s->taken = 0;
	c->untaken++;
	Py_INCREF(name);
	s->name = name;
	c->head++;
	if (c->head - c->completed > c->peak)
		c->peak = c->head - c->completed;
	wake_one(c);
	if (p->failure_name != NULL)
		flags |= 2;
	pthread_mutex_unlock(&c->mu);
	/* raised: the descriptor is queued, the exception goes on */
	return raised ? NULL : PyLong_FromLong(flags);
}

PyDoc_STRVAR(submit_files_doc,
	     "submit_files(tasks) -> flags\n\n"
	     "Queue new files and directories to be made.  Each task is "
	     "(path, data, mode, name, after): path (bytes) is created with "
	     "O_EXCL and data (a bytes-like object, kept until done) written "
	     "to it, then it is closed; with data None, path is a directory "
	     "to make.  mode >= 0 is given with chmod (-1: the mode the umask "
	     "leaves).  after is the seq (see `submitted`) of the directory "
	     "task this one waits for, or -1.  Waits while `capacity` tasks "
	     "are pending or their content exceeds the budget, checking for "
	     "signals every 0.1 s (a handler that raises leaves the rest of "
	     "the tasks unqueued).  After a failure, later files and "
	     "directories are skipped.  Flags as submit().");

/* the lane of the directory `path` is in (FNV-1a of its parent's path) */
static int parent_lane(const char *path, Py_ssize_t len)
{
	unsigned int h = 2166136261u;
	Py_ssize_t i, end = len;
	while (end > 0 && path[end - 1] == '/')
		end--;
	while (end > 0 && path[end - 1] != '/')
		end--;
	for (i = 0; i < end; i++)
		h = (h ^ (unsigned char)path[i]) * 16777619u;
	return (int)(h % LANES);
}

static void task_drop(Slot *t)
{
	Py_CLEAR(t->keep);
	Py_CLEAR(t->name);
	if (t->has_view) {
		PyBuffer_Release(&t->view);
		t->has_view = 0;
	}
}

static PyObject *pool_submit_files(Pool *p, PyObject *arg)
{
	PyObject *seq;
	Py_ssize_t i, n;
	Slot *tasks;
	Core *c;
	int flags = 0, raised = 0, dropped = 0;
	long long start = 0;
	if (pool_check(p) < 0)
		return NULL;
	c = p->core;
	if (c->stopping) {
		PyErr_SetString(PyExc_ValueError, "pool is finished");
		return NULL;
	}
	seq = PySequence_Fast(arg, "submit_files() takes a sequence of tasks");
	if (seq == NULL)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	tasks = PyMem_Calloc(n ? n : 1, sizeof(Slot));
	if (tasks == NULL) {
		Py_DECREF(seq);
		return PyErr_NoMemory();
	}
	/* everything that can fail comes before the first task is queued */
	for (i = 0; i < n; i++) {
		PyObject *path, *data, *name;
		Py_ssize_t after;
		int mode;
		Slot *t = &tasks[i];
		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "SOiOn",
				      &path, &data, &mode, &name, &after))
			goto error;
		Py_INCREF(path);
		t->keep = path;
		t->path = PyBytes_AS_STRING(path);
		Py_INCREF(name);
		t->name = name;
		t->mode = mode;
		t->after = after < 0 ? 0 : (size_t)after + 1;
		t->lane = parent_lane(t->path, PyBytes_GET_SIZE(path));
		if (data == Py_None) {
			t->kind = TASK_DIR;
			continue;
		}
		t->kind = TASK_FILE;
		if (PyObject_GetBuffer(data, &t->view, PyBUF_SIMPLE) < 0)
			goto error;
		t->has_view = 1;
		t->data = t->view.buf;
		t->len = (size_t)t->view.len;
	}
	pthread_mutex_lock(&c->mu);
	pool_reclaim(p);
	for (i = 0; i < n; i++) {
		Slot *t = &tasks[i], *s;
		while (c->head - c->reclaim >= c->ring ||
		       (c->bytes && c->bytes + t->len > c->budget)) {
			int stop;
			if (!(flags & 1)) {
				flags |= 1;
				start = now_ns();
			}
			wake_one(c);
			/* back when an eighth of the ring is free, or at each
			 * task done when content is what is short */
			pool_wait(c,
				  c->head - c->reclaim >= c->ring
				      ? c->ring - c->ring / 8
				      : c->head - c->completed - 1,
				  -1, now_ns() + (long long)(STEP_S * NS));
			pool_reclaim(p);
			if (c->head - c->reclaim < c->ring &&
			    !(c->bytes && c->bytes + t->len > c->budget))
				break;
			/* the operation is failing: the rest need not be made
			 * (a task that hangs may be what keeps the ring full) */
			if (c->failed) {
				dropped = 1;
				break;
			}
			pthread_mutex_unlock(&c->mu);
			stop = PyErr_CheckSignals();
			pthread_mutex_lock(&c->mu);
			if (stop < 0) {
				raised = 1;
				break;
			}
		}
		if (raised || dropped)
			break;
		s = &c->slots[c->head % c->nslots];
		*s = *t;
		s->err = 0;
		s->done = 0;
		s->taken = 0;
		c->untaken++;
		/* the slot owns them now */
		t->keep = t->name = NULL;
		t->has_view = 0;
		c->bytes += s->len;
		if (c->bytes > c->peak_bytes)
			c->peak_bytes = c->bytes;
		c->head++;
		if (c->head - c->completed > c->peak)
			c->peak = c->head - c->completed;
	}
	wake_one(c);
	if (flags & 1)
		p->wait_ns += now_ns() - start;
	/* (a failure not reclaimed yet, behind a task that hangs, counts) */
	if (p->failure_name != NULL || c->failed)
		flags |= 2;
	pthread_mutex_unlock(&c->mu);
	for (i = 0; i < n; i++)
		task_drop(&tasks[i]);
	PyMem_Free(tasks);
	Py_DECREF(seq);
	return raised ? NULL : PyLong_FromLong(flags);
error:
	for (i = 0; i < n; i++)
		task_drop(&tasks[i]);
	PyMem_Free(tasks);
	Py_DECREF(seq);
	return NULL;
}

/* wait until every queued close is done (and, when stopping, every thread
 * has ended) or `timeout` seconds have passed; timeout < 0: no limit, in
 * steps between which signals are checked (-1 if a handler raised) */
static int pool_wait_done(Pool *p, double timeout)
{
	Core *c = p->core;
	long long deadline = now_ns() + (long long)(timeout * NS);
	int done;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		int rc;
		done = c->completed == c->head && (!c->stopping || !c->running);
		if (done)
			break;
		if (timeout >= 0) {
			rc = pool_wait(c, 0, -1, deadline);
			if (rc == ETIMEDOUT || now_ns() >= deadline) {
				done = c->completed == c->head &&
				       (!c->stopping || !c->running);
				break;
			}
		} else {
			rc = pool_wait(c, 0, -1,
				       now_ns() + (long long)(STEP_S * NS));
			if (rc == ETIMEDOUT) {
				pthread_mutex_unlock(&c->mu);
				if (PyErr_CheckSignals() < 0)
					return -1;
				pthread_mutex_lock(&c->mu);
			}
		}
	}
	pool_reclaim(p);
	pthread_mutex_unlock(&c->mu);
	return done;
}

/* drain() and finish(): the optional timeout, then the wait */
static PyObject *pool_wait_call(Pool *p, PyObject *const *args,
				Py_ssize_t nargs, int stop)
{
	double timeout = -1.0;
	int done;
	if (nargs > 1) {
		PyErr_SetString(PyExc_TypeError, "at most one argument");
		return NULL;
	}
	if (nargs == 1 && args[0] != Py_None) {
		timeout = PyFloat_AsDouble(args[0]);
		if (timeout == -1.0 && PyErr_Occurred())
			return NULL;
		if (timeout < 0)
			timeout = 0;
	}
	if (pool_check(p) < 0)
		return NULL;
	if (stop) {
		pthread_mutex_lock(&p->core->mu);
		p->core->stopping = 1;
		pthread_cond_broadcast(&p->core->work);
		pthread_mutex_unlock(&p->core->mu);
	}
	done = pool_wait_done(p, timeout);
	if (done < 0)
		return NULL;
	if (stop && done)
		reap_threads();
	return PyBool_FromLong(done);
}

PyDoc_STRVAR(drain_doc,
	     "drain(timeout=None) -> bool\n\n"
	     "Wait at most timeout seconds (None: as long as it takes, "
	     "checking for signals every 0.1 s) for every queued close; True "
	     "when none is left.");

static PyObject *pool_drain(Pool *p, PyObject *const *args, Py_ssize_t nargs)
{
	return pool_wait_call(p, args, nargs, 0);
}

PyDoc_STRVAR(finish_doc,
	     "finish(timeout=None) -> bool\n\n"
	     "Stop the threads once they have closed everything queued; wait "
	     "at most timeout seconds (None: as long as it takes, checking for "
	     "signals every 0.1 s).  True when every close is done and every "
	     "thread has ended; else call it again, or drop the Pool: threads "
	     "still closing end on their own.");

static PyObject *pool_finish(Pool *p, PyObject *const *args, Py_ssize_t nargs)
{
	return pool_wait_call(p, args, nargs, 1);
}

static PyObject *pool_add_thread(Pool *p, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"only_if_blocked", NULL};
	Core *c;
	int rc = 0, n, only_if_blocked = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist,
					 &only_if_blocked) ||
	    pool_check(p) < 0)
		return NULL;
	c = p->core;
	pthread_mutex_lock(&c->mu);
	/* the owner waited for room: one more thread if the filesystem kept
	 * the threads waiting since the last one; a busy CPU (threads that
	 * run late, not threads that wait) is not helped by more of them */
	if (c->blocked || !only_if_blocked) {
		c->blocked = 0;
		rc = pool_start_thread(c, 0);
	}
	n = c->running;
	pthread_mutex_unlock(&c->mu);
	if (rc != 0) {
		errno = rc;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	return PyLong_FromLong(n);
}

static PyObject *pool_failure(Pool *p, PyObject *unused)
{
	PyObject *found = NULL;
	if (p->failure_name != NULL)
		return Py_BuildValue("(Oii)", p->failure_name, p->failure_errno,
				     p->failure_step);
	if (p->core != NULL && p->core->generation == fork_generation) {
		/* one done but not reclaimed yet (behind a task still running) */
		Core *c = p->core;
		size_t seq;
		pthread_mutex_lock(&c->mu);
		for (seq = c->reclaim; seq < c->head; seq++) {
			Slot *s = &c->slots[seq % c->nslots];
			if (s->done && s->err && s->step >= 0 && s->name) {
				found = Py_BuildValue("(Oii)", s->name, s->err,
						      s->step);
				break;
			}
		}
		pthread_mutex_unlock(&c->mu);
	}
	if (found != NULL || PyErr_Occurred())
		return found;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(unfinished_doc,
	     "unfinished() -> (count, name)\n\n"
	     "Closes queued and not finished, and the name of the oldest of "
	     "them (None if there is none).");

static PyObject *pool_unfinished(Pool *p, PyObject *unused)
{
	Core *c;
	size_t seq, n;
	PyObject *name = Py_None;
	if (pool_check(p) < 0)
		return NULL;
	c = p->core;
	pthread_mutex_lock(&c->mu);
	n = c->head - c->completed;
	for (seq = c->reclaim; seq < c->head; seq++) {
		Slot *s = &c->slots[seq % c->nslots];
		if (!s->done && s->name != NULL) {
			name = s->name;
			break;
		}
	}
	Py_INCREF(name);
	pthread_mutex_unlock(&c->mu);
	return Py_BuildValue("(nN)", (Py_ssize_t)n, name);
}

static PyObject *pool_get_pending(Pool *p, void *closure)
{
	size_t n;
	if (pool_check(p) < 0)
		return NULL;
	pthread_mutex_lock(&p->core->mu);
	n = p->core->head - p->core->completed;
	pthread_mutex_unlock(&p->core->mu);
	return PyLong_FromSize_t(n);
}

static PyObject *pool_get_peak(Pool *p, void *closure)
{
	return PyLong_FromSize_t(p->core ? p->core->peak : 0);
}

static PyObject *pool_get_wait_ns(Pool *p, void *closure)
{
	return PyLong_FromLongLong(p->wait_ns);
}

static PyObject *pool_get_threads(Pool *p, void *closure)
{
	int n;
	if (pool_check(p) < 0)
		return NULL;
	pthread_mutex_lock(&p->core->mu);
	n = p->core->running;
	pthread_mutex_unlock(&p->core->mu);
	return PyLong_FromLong(n);
}

static PyObject *pool_get_peak_bytes(Pool *p, void *closure)
{
	return PyLong_FromSize_t(p->core ? p->core->peak_bytes : 0);
}

static PyObject *pool_get_peak_threads(Pool *p, void *closure)
{
	return PyLong_FromLong(p->core ? p->core->peak_running : 0);
}

static PyObject *pool_get_waited(Pool *p, void *closure)
{
	return PyLong_FromSize_t(p->core ? p->core->waited : 0);
}

static PyObject *pool_get_submitted(Pool *p, void *closure)
{
	return PyLong_FromSize_t(p->core ? p->core->head : 0);
}

static PyMethodDef pool_methods[] = {
	{"submit", (PyCFunction)pool_submit, METH_VARARGS, submit_doc},
	{"submit_files", (PyCFunction)pool_submit_files, METH_O,
	 submit_files_doc},
	{"drain", (PyCFunction)(void (*)(void))pool_drain, METH_FASTCALL,
	 drain_doc},
	{"finish", (PyCFunction)(void (*)(void))pool_finish, METH_FASTCALL,
	 finish_doc},
	{"add_thread", (PyCFunction)(void (*)(void))pool_add_thread,
	 METH_VARARGS | METH_KEYWORDS,
	 "add_thread(only_if_blocked=False) -> threads\n\nOne more thread, up "
	 "to max_threads; with only_if_blocked, only if a task was kept "
	 "waiting by the filesystem since the last one so added."},
	{"failure", (PyCFunction)pool_failure, METH_NOARGS,
	 "failure() -> (name, errno, step) of the first failed task, or "
	 "None (step: 0 close, 1 create, 2 write, 3 chmod, 4 mkdir)"},
	{"unfinished", (PyCFunction)pool_unfinished, METH_NOARGS,
	 unfinished_doc},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef pool_getset[] = {
	{"pending", (getter)pool_get_pending, NULL, "closes not finished", NULL},
	{"peak", (getter)pool_get_peak, NULL, "most closes pending at once",
	 NULL},
	{"wait_ns", (getter)pool_get_wait_ns, NULL,
	 "time submit() waited for room", NULL},
	{"threads", (getter)pool_get_threads, NULL, "running threads", NULL},
	{"peak_threads", (getter)pool_get_peak_threads, NULL,
	 "most threads running at once", NULL},
	{"peak_bytes", (getter)pool_get_peak_bytes, NULL,
	 "most file content queued at once", NULL},
	{"submitted", (getter)pool_get_submitted, NULL, "closes queued", NULL},
	{"waited", (getter)pool_get_waited, NULL,
	 "tasks the filesystem kept waiting (a thread slept in them)", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PoolType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_writepool.Pool",
	.tp_basicsize = sizeof(Pool),
	.tp_dealloc = (destructor)pool_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Pool(capacity, threads, max_threads, interrupted=None): "
		  "close descriptors on threads that never take the GIL.",
	.tp_methods = pool_methods,
	.tp_getset = pool_getset,
	.tp_new = pool_new,
};
#endif /* _WIN32 */

PyDoc_STRVAR(trim_doc,
	     "trim() -> None\n\n"
	     "Give the free pages of every malloc arena back to the system "
	     "(glibc's malloc_trim(0), the GIL released; nothing elsewhere).  "
	     "glibc keeps what a long-running process freed, and the arenas of "
	     "threads that have ended, resident.");

static PyObject *trim(PyObject *self, PyObject *unused)
{
#ifdef __GLIBC__
	Py_BEGIN_ALLOW_THREADS
	malloc_trim(0);
	Py_END_ALLOW_THREADS
#endif
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{"close_all", close_all, METH_O, close_all_doc},
	{"trim", trim, METH_NOARGS, trim_doc},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_writepool",
	"Close batches of file descriptors without the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__writepool(void)
{
	PyObject *m = PyModule_Create(&module);
	if (m == NULL)
		return NULL;
#ifndef _WIN32
	if (!atfork_registered) {
		if (pthread_atfork(NULL, NULL, after_fork_in_child) != 0) {
			Py_DECREF(m);
			return PyErr_NoMemory();
		}
		atfork_registered = 1;
	}
	if (PyType_Ready(&PoolType) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	Py_INCREF(&PoolType);
	if (PyModule_AddObject(m, "Pool", (PyObject *)&PoolType) < 0) {
		Py_DECREF(&PoolType);
		Py_DECREF(m);
		return NULL;
	}
#endif
	return m;
}

/* Close a batch of file descriptors with the GIL released once.
 *
 * A closing thread written in Python takes the GIL back after every
 * os.close(); while the main thread runs Python, each of those hand-offs
 * costs it a wake-up and a wait (measured: over a second of CPU for 10k
 * closes of 1 ms each).  close_all() closes the whole batch in C and
 * reports every failure, so no error is lost.
 *
 * Optional: closer.py falls back to os.close when this is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
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
 * pending closes) and goes on; the threads take them in order and record
 * each close's errno in its slot.  The main thread frees the slots (and
 * keeps the first failure with its name) when it next submits or drains.
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
 * (threads are detached): the last one frees it, and a hung thread simply
 * ends whenever its close returns.  Threads never touch Python objects;
 * names stay with the owner, under the GIL.
 *
 * fork(): the child has none of the threads and may have a copy of a lock
 * one of them held.  Every method checks that the Pool was made in this
 * process (a generation counter bumped by a pthread_atfork handler) and
 * raises RuntimeError in a child; a child's copy of a Core is never freed.
 *
 * POSIX threads only; on Windows closer.py uses its Python threads.
 */
#include <sched.h>
#include <time.h>

#define NS 1000000000LL
/* slots beyond `capacity` for descriptors submit() is interrupted with */
#define SPARE 16
/* longest wait between two checks for signals when waiting without limit */
#define STEP_S 0.1

typedef struct {
	int fd;
	int err;
	int done;
	PyObject *name; /* the owner's, under the GIL; threads never read it */
} Slot;

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a slot was filled, or stopping */
	pthread_cond_t room; /* a close finished, or a thread ended */
	Slot *slots;
	size_t capacity;  /* pending closes submit() waits below */
	size_t nslots;	  /* capacity + SPARE */
	size_t head;	  /* slots filled so far */
	size_t take;	  /* slots taken by threads */
	size_t reclaim;	  /* slots freed by the owner */
	size_t completed; /* closes finished */
	size_t peak;
	int waiting; /* the owner waits on `room` */
	size_t wake_at; /* ... until this few closes are pending */
	int idle;	/* threads waiting on `work` */
	int waking;	/* `work` signalled, no thread woke yet */
	int stopping;
	int running; /* threads started and not ended */
	int maxthreads;
	int refs; /* the Pool (until freed) and each running thread */
	unsigned long generation; /* fork_generation when it was made */
} Core;

typedef struct {
	PyObject_HEAD
	Core *core;
	PyObject *interrupted; /* callable submit() asks while it waits */
	PyObject *failure_name; /* first failure */
	int failure_errno;
	long long wait_ns; /* time submit() spent waiting for room */
} Pool;

/* bumped in the child of every fork() */
static volatile unsigned long fork_generation;
static int atfork_registered;

static void after_fork_in_child(void)
{
	fork_generation++;
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

static void *pool_worker(void *arg)
{
	Core *c = arg;
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
		int fd, err;
		while (c->take == c->head && !c->stopping) {
			c->idle++;
			pthread_cond_wait(&c->work, &c->mu);
			c->idle--;
			c->waking = 0;
		}
		if (c->take == c->head)
			break;
		seq = c->take++;
		/* wake the next thread from here, not from the producer */
		if (c->take != c->head && c->idle && !c->waking) {
			c->waking = 1;
			pthread_cond_signal(&c->work);
		}
		fd = c->slots[seq % c->nslots].fd;
		pthread_mutex_unlock(&c->mu);
		err = close_fd(fd);
		pthread_mutex_lock(&c->mu);
		c->slots[seq % c->nslots].err = err;
		c->slots[seq % c->nslots].done = 1;
		c->completed++;
		if (c->waiting && c->head - c->completed <= c->wake_at)
			pthread_cond_signal(&c->room);
	}
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

/* free the finished slots at the front; mutex and GIL held */
static void pool_reclaim(Pool *p)
{
	Core *c = p->core;
	while (c->reclaim < c->head) {
		Slot *s = &c->slots[c->reclaim % c->nslots];
		if (!s->done)
			break;
		if (s->err && p->failure_name == NULL) {
			p->failure_name = s->name;
			p->failure_errno = s->err;
		} else {
			Py_XDECREF(s->name);
		}
		s->name = NULL;
		s->done = 0;
		c->reclaim++;
	}
}

/* one more thread, unless stopping or at the maximum; mutex held; 0 or
 * pthread_create's error */
static int pool_start_thread(Core *c)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;
	int rc;
	if (c->running >= c->maxthreads || c->stopping)
		return 0;
	/* signals go to the main thread (Python handles them there), never
	 * interrupt a close here: the new thread inherits this mask */
	sigfillset(&all);
	pthread_attr_init(&attr);
	/* a close needs little stack: tens of threads, not tens of 8 MB maps */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	/* nobody joins them: a thread whose close hangs may outlive the Pool */
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	c->running++;
	c->refs++;
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&thread, &attr, pool_worker, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		c->running--;
		c->refs--;
	}
	return rc;
}

static PyObject *pool_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"capacity", "threads", "max_threads",
				 "interrupted", NULL};
	Py_ssize_t capacity;
	int threads, maxthreads, i, rc = 0;
	PyObject *interrupted = Py_None;
	Pool *p;
	Core *c;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "nii|O", kwlist, &capacity,
					 &threads, &maxthreads, &interrupted))
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
		c->slots = calloc(capacity + SPARE, sizeof(Slot));
	if (c == NULL || c->slots == NULL) {
		free(c);
		Py_DECREF(p);
		return PyErr_NoMemory();
	}
	c->capacity = capacity;
	c->nslots = capacity + SPARE;
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
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < threads && rc == 0; i++)
		rc = pool_start_thread(c);
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
		/* the names are the owner's: threads only read descriptors */
		for (seq = c->reclaim; seq < c->head; seq++)
			Py_CLEAR(c->slots[seq % c->nslots].name);
		pthread_mutex_lock(&c->mu);
		/* threads close what is queued, then end; the last frees it */
		c->stopping = 1;
		pthread_cond_broadcast(&c->work);
		last = --c->refs == 0;
		pthread_mutex_unlock(&c->mu);
		if (last)
			core_free(c);
	}
	/* (in a forked child the copy of the Core is left alone: its lock
	 * may have been held by a thread that does not exist here) */
	Py_XDECREF(p->interrupted);
	Py_XDECREF(p->failure_name);
	Py_TYPE(p)->tp_free((PyObject *)p);
}

/* wait on `room` until `deadline`; mutex held, GIL released and taken back
 * without the mutex (no lock-order inversion) */
static int pool_wait(Core *c, size_t wake_at, long long deadline)
{
	int rc;
	c->wake_at = wake_at;
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
	while (c->head - c->reclaim >= c->capacity) {
		int stop;
		if (!(flags & 1)) {
			flags |= 1;
			start = now_ns();
		}
		/* back when an eighth of the slots is free, not at each close */
		pool_wait(c,
			  c->capacity - (c->capacity >= 8 ? c->capacity / 8 : 1),
			  now_ns() + (long long)(STEP_S * NS));
		pool_reclaim(p);
		if (c->head - c->reclaim < c->capacity)
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
	s->fd = fd;
	s->err = 0;
	s->done = 0;
	Py_INCREF(name);
	s->name = name;
	c->head++;
	if (c->head - c->completed > c->peak)
		c->peak = c->head - c->completed;
	if (c->idle && !c->waking) {
		c->waking = 1;
		pthread_cond_signal(&c->work);
	}
	if (p->failure_name != NULL)
		flags |= 2;
	pthread_mutex_unlock(&c->mu);
	/* raised: the descriptor is queued, the exception goes on */
	return raised ? NULL : PyLong_FromLong(flags);
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
			rc = pool_wait(c, 0, deadline);
			if (rc == ETIMEDOUT || now_ns() >= deadline) {
				done = c->completed == c->head &&
				       (!c->stopping || !c->running);
				break;
			}
		} else {
			rc = pool_wait(c, 0, now_ns() + (long long)(STEP_S * NS));
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

static PyObject *pool_add_thread(Pool *p, PyObject *unused)
{
	Core *c;
	int rc, n;
	if (pool_check(p) < 0)
		return NULL;
	c = p->core;
	pthread_mutex_lock(&c->mu);
	rc = pool_start_thread(c);
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
	if (p->failure_name == NULL)
		Py_RETURN_NONE;
	return Py_BuildValue("(Oi)", p->failure_name, p->failure_errno);
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

static PyObject *pool_get_submitted(Pool *p, void *closure)
{
	return PyLong_FromSize_t(p->core ? p->core->head : 0);
}

static PyMethodDef pool_methods[] = {
	{"submit", (PyCFunction)pool_submit, METH_VARARGS, submit_doc},
	{"drain", (PyCFunction)(void (*)(void))pool_drain, METH_FASTCALL,
	 drain_doc},
	{"finish", (PyCFunction)(void (*)(void))pool_finish, METH_FASTCALL,
	 finish_doc},
	{"add_thread", (PyCFunction)pool_add_thread, METH_NOARGS,
	 "add_thread() -> threads\n\nOne more thread, up to max_threads."},
	{"failure", (PyCFunction)pool_failure, METH_NOARGS,
	 "failure() -> (name, errno) of the first failed close, or None"},
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
	{"submitted", (getter)pool_get_submitted, NULL, "closes queued", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PoolType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_fdclose.Pool",
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

static PyMethodDef methods[] = {
	{"close_all", close_all, METH_O, close_all_doc},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_fdclose",
	"Close batches of file descriptors without the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__fdclose(void)
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

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
#define close_fd _close
#else
#include <unistd.h>
#define close_fd close
#endif

PyDoc_STRVAR(close_all_doc,
	     "close_all(fds) -> [(index, errno), ...]\n\n"
	     "Close every descriptor of the sequence (GIL released) and list "
	     "the ones whose close failed.");

static PyObject *close_all(PyObject *self, PyObject *arg)
{
	PyObject *seq, *failures = NULL;
	Py_ssize_t i, n;
	int *fds, *errs;

	seq = PySequence_Fast(arg, "close_all() takes a sequence of ints");
	if (seq == NULL)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	fds = PyMem_Malloc((n ? n : 1) * 2 * sizeof(int));
	if (fds == NULL) {
		Py_DECREF(seq);
		return PyErr_NoMemory();
	}
	errs = fds + n;
	for (i = 0; i < n; i++) {
		long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
		if (fd == -1 && PyErr_Occurred())
			goto done;
		if (fd < 0 || fd > INT_MAX) {
			PyErr_SetString(PyExc_ValueError, "not a file descriptor");
			goto done;
		}
		fds[i] = (int)fd;
	}
	Py_BEGIN_ALLOW_THREADS
	for (i = 0; i < n; i++)
		errs[i] = close_fd(fds[i]) == 0 ? 0 : errno;
	Py_END_ALLOW_THREADS
	failures = PyList_New(0);
	if (failures == NULL)
		goto done;
	for (i = 0; i < n; i++) {
		PyObject *item;
		if (!errs[i])
			continue;
		item = Py_BuildValue("(ni)", i, errs[i]);
		if (item == NULL || PyList_Append(failures, item) < 0) {
			Py_XDECREF(item);
			Py_CLEAR(failures);
			goto done;
		}
		Py_DECREF(item);
	}
done:
	PyMem_Free(fds);
	Py_DECREF(seq);
	return failures;
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
 * POSIX threads only; on Windows closer.py uses its Python threads.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

typedef struct {
	int fd;
	int err;
	int done;
	PyObject *name;
} Slot;

typedef struct {
	PyObject_HEAD
	pthread_mutex_t mu;
	pthread_cond_t work; /* a slot was filled, or stopping */
	pthread_cond_t room; /* a close finished */
	Slot *slots;
	size_t capacity;
	size_t head;	  /* slots filled so far */
	size_t take;	  /* slots taken by threads */
	size_t reclaim;	  /* slots freed by the owner */
	size_t completed; /* closes finished */
	size_t peak;
	long long wait_ns; /* owner time spent waiting for room */
	int waiting;	   /* the owner waits on `room` */
	size_t wake_at;	   /* ... until this few closes are pending */
	int idle;	   /* threads waiting on `work` */
	int waking;	   /* `work` signalled, no thread woke yet */
	int stopping;
	pthread_t *threads;
	int nthreads;
	int maxthreads;
	PyObject *failure_name; /* first failure */
	int failure_errno;
} Pool;

static void *pool_worker(void *arg)
{
	Pool *p = arg;
#ifdef SCHED_BATCH
	/* a close that ends must not preempt the thread producing the files:
	 * the batch policy turns wake-up preemption off (no privilege needed) */
	struct sched_param param = {0};
	pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
#endif
	pthread_mutex_lock(&p->mu);
	for (;;) {
		size_t seq;
		int fd, err;
		while (p->take == p->head && !p->stopping) {
			p->idle++;
			pthread_cond_wait(&p->work, &p->mu);
			p->idle--;
			p->waking = 0;
		}
		if (p->take == p->head)
			break;
		seq = p->take++;
		/* wake the next thread from here, not from the producer */
		if (p->take != p->head && p->idle && !p->waking) {
			p->waking = 1;
			pthread_cond_signal(&p->work);
		}
		fd = p->slots[seq % p->capacity].fd;
		pthread_mutex_unlock(&p->mu);
		/* on Linux the descriptor is gone even when close() says EINTR */
		err = close(fd) == 0 || errno == EINTR ? 0 : errno;
		pthread_mutex_lock(&p->mu);
		p->slots[seq % p->capacity].err = err;
		p->slots[seq % p->capacity].done = 1;
		p->completed++;
		if (p->waiting && p->head - p->completed <= p->wake_at)
			pthread_cond_signal(&p->room);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* deadline for pthread_cond_timedwait (CLOCK_REALTIME) */
static struct timespec deadline_after(double seconds)
{
	struct timespec ts;
	long long ns;
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = ts.tv_nsec + (long long)(seconds * 1e9);
	ts.tv_sec += ns / 1000000000LL;
	ts.tv_nsec = ns % 1000000000LL;
	return ts;
}

/* free the finished slots at the front; mutex and GIL held */
static void pool_reclaim(Pool *p)
{
	while (p->reclaim < p->head) {
		Slot *s = &p->slots[p->reclaim % p->capacity];
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
		p->reclaim++;
	}
}

static int pool_start_thread(Pool *p)
{
	sigset_t all, old;
	pthread_attr_t attr;
	int rc;
	if (p->nthreads >= p->maxthreads)
		return 0;
	/* signals go to the main thread (Python handles them there), never
	 * interrupt a close here: the new thread inherits this mask */
	sigfillset(&all);
	pthread_attr_init(&attr);
	/* a close needs little stack: tens of threads, not tens of 8 MB maps */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&p->threads[p->nthreads], &attr, pool_worker, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	p->nthreads++;
	return 0;
}

static PyObject *pool_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"capacity", "threads", "max_threads", NULL};
	Py_ssize_t capacity;
	int threads, maxthreads, i;
	Pool *p;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "nii", kwlist, &capacity,
					 &threads, &maxthreads))
		return NULL;
	if (capacity < 1 || threads < 1 || maxthreads < threads) {
		PyErr_SetString(PyExc_ValueError, "bad pool size");
		return NULL;
	}
	p = (Pool *)type->tp_alloc(type, 0);
	if (p == NULL)
		return NULL;
	p->slots = PyMem_Calloc(capacity, sizeof(Slot));
	p->threads = PyMem_Calloc(maxthreads, sizeof(pthread_t));
	if (p->slots == NULL || p->threads == NULL) {
		PyMem_Free(p->slots);
		PyMem_Free(p->threads);
		p->slots = NULL;
		p->threads = NULL;
		Py_DECREF(p);
		return PyErr_NoMemory();
	}
	p->capacity = capacity;
	p->maxthreads = maxthreads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->room, NULL);
	for (i = 0; i < threads; i++) {
		if (pool_start_thread(p) < 0) {
			Py_DECREF(p);
			return NULL;
		}
	}
	return (PyObject *)p;
}

/* stop and join the threads once they closed everything; GIL held */
static void pool_stop(Pool *p)
{
	int i, n;
	if (p->threads == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	n = p->nthreads;
	Py_BEGIN_ALLOW_THREADS
	for (i = 0; i < n; i++)
		pthread_join(p->threads[i], NULL);
	Py_END_ALLOW_THREADS
	p->nthreads = 0;
}

static void pool_dealloc(Pool *p)
{
	size_t i;
	if (p->slots != NULL) {
		pool_stop(p);
		for (i = 0; i < p->capacity; i++)
			Py_XDECREF(p->slots[i].name);
		Py_XDECREF(p->failure_name);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->work);
		pthread_cond_destroy(&p->room);
	}
	PyMem_Free(p->slots);
	PyMem_Free(p->threads);
	Py_TYPE(p)->tp_free((PyObject *)p);
}

/* wait on `room` for at most `seconds`; mutex held, GIL released and
 * taken back without the mutex (no lock-order inversion) */
static void pool_wait_room(Pool *p, double seconds)
{
	struct timespec until = deadline_after(seconds);
	/* back when an eighth of the slots is free, not at each close */
	p->wake_at = p->capacity - (p->capacity >= 8 ? p->capacity / 8 : 1);
	p->waiting = 1;
	Py_BEGIN_ALLOW_THREADS
	pthread_cond_timedwait(&p->room, &p->mu, &until);
	pthread_mutex_unlock(&p->mu);
	Py_END_ALLOW_THREADS
	pthread_mutex_lock(&p->mu);
	p->waiting = 0;
}

PyDoc_STRVAR(submit_doc,
	     "submit(fd, name) -> flags\n\n"
	     "Queue fd to be closed; name is kept for an error message.  Waits "
	     "while all slots are pending.  Flags: 1 it had to wait, 2 a close "
	     "has failed (see failure()).");

static PyObject *pool_submit(Pool *p, PyObject *args)
{
	int fd, flags = 0;
	PyObject *name;
	Slot *s;
	long long start = 0;
	if (!PyArg_ParseTuple(args, "iO", &fd, &name))
		return NULL;
	if (p->stopping) {
		PyErr_SetString(PyExc_ValueError, "pool is finished");
		return NULL;
	}
	pthread_mutex_lock(&p->mu);
	pool_reclaim(p);
	while (p->head - p->reclaim >= p->capacity) {
		if (!flags) {
			flags = 1;
			start = now_ns();
		}
		pool_wait_room(p, 0.1);
		pool_reclaim(p);
		if (p->head - p->reclaim >= p->capacity) {
			pthread_mutex_unlock(&p->mu);
			if (PyErr_CheckSignals() < 0) {
				/* interrupted: the descriptor is still ours */
				close(fd);
				p->wait_ns += now_ns() - start;
				return NULL;
			}
			pthread_mutex_lock(&p->mu);
		}
	}
	if (flags)
		p->wait_ns += now_ns() - start;
	s = &p->slots[p->head % p->capacity];
	s->fd = fd;
	s->err = 0;
	s->done = 0;
	Py_INCREF(name);
	s->name = name;
	p->head++;
	if (p->head - p->completed > p->peak)
		p->peak = p->head - p->completed;
	if (p->idle && !p->waking) {
		p->waking = 1;
		pthread_cond_signal(&p->work);
	}
	if (p->failure_name != NULL)
		flags |= 2;
	pthread_mutex_unlock(&p->mu);
	return PyLong_FromLong(flags);
}

PyDoc_STRVAR(drain_doc, "drain(timeout) -> bool\n\n"
			"Wait at most timeout seconds for every queued close; "
			"True when none is left.");

static PyObject *pool_drain(Pool *p, PyObject *arg)
{
	double timeout = PyFloat_AsDouble(arg);
	struct timespec until;
	int done;
	if (timeout == -1.0 && PyErr_Occurred())
		return NULL;
	until = deadline_after(timeout);
	pthread_mutex_lock(&p->mu);
	while (p->completed < p->head) {
		int rc;
		p->wake_at = 0;
		p->waiting = 1;
		Py_BEGIN_ALLOW_THREADS
		rc = pthread_cond_timedwait(&p->room, &p->mu, &until);
		pthread_mutex_unlock(&p->mu);
		Py_END_ALLOW_THREADS
		pthread_mutex_lock(&p->mu);
		p->waiting = 0;
		if (rc == ETIMEDOUT)
			break;
	}
	pool_reclaim(p);
	done = p->reclaim == p->head;
	pthread_mutex_unlock(&p->mu);
	return PyBool_FromLong(done);
}

static PyObject *pool_finish(Pool *p, PyObject *unused)
{
	pool_stop(p);
	pthread_mutex_lock(&p->mu);
	pool_reclaim(p);
	pthread_mutex_unlock(&p->mu);
	Py_RETURN_NONE;
}

static PyObject *pool_add_thread(Pool *p, PyObject *unused)
{
	if (!p->stopping && pool_start_thread(p) < 0)
		return NULL;
	return PyLong_FromLong(p->nthreads);
}

static PyObject *pool_failure(Pool *p, PyObject *unused)
{
	if (p->failure_name == NULL)
		Py_RETURN_NONE;
	return Py_BuildValue("(Oi)", p->failure_name, p->failure_errno);
}

static PyObject *pool_get_pending(Pool *p, void *closure)
{
	size_t n;
	pthread_mutex_lock(&p->mu);
	n = p->head - p->completed;
	pthread_mutex_unlock(&p->mu);
	return PyLong_FromSize_t(n);
}

static PyObject *pool_get_peak(Pool *p, void *closure)
{
	return PyLong_FromSize_t(p->peak);
}

static PyObject *pool_get_wait_ns(Pool *p, void *closure)
{
	return PyLong_FromLongLong(p->wait_ns);
}

static PyObject *pool_get_threads(Pool *p, void *closure)
{
	return PyLong_FromLong(p->nthreads);
}

static PyObject *pool_get_submitted(Pool *p, void *closure)
{
	return PyLong_FromSize_t(p->head);
}

static PyMethodDef pool_methods[] = {
	{"submit", (PyCFunction)pool_submit, METH_VARARGS, submit_doc},
	{"drain", (PyCFunction)pool_drain, METH_O, drain_doc},
	{"finish", (PyCFunction)pool_finish, METH_NOARGS,
	 "finish()\n\nClose everything queued and stop the threads."},
	{"add_thread", (PyCFunction)pool_add_thread, METH_NOARGS,
	 "add_thread() -> threads\n\nOne more thread, up to max_threads."},
	{"failure", (PyCFunction)pool_failure, METH_NOARGS,
	 "failure() -> (name, errno) of the first failed close, or None"},
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
	.tp_doc = "Pool(capacity, threads, max_threads): close descriptors on "
		  "threads that never take the GIL.",
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

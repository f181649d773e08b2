/* Populate a memory mapping (fault its pages in) off Python's lock.
 *
 * mmappolicy.py asks for population of the mappings Mercurial makes of
 * store data (revlog indexes, nodemaps).  start() hands a mapping to a
 * thread of its own that never takes the GIL; populate() does the same in
 * the calling thread with the GIL released.  Pages are populated a chunk
 * at a time, and the stop flag is read between chunks: a job stops within
 * one chunk once asked to (the mapping closed, the command over).
 *
 * Methods, tried in this order and detected when they are used (never at
 * build time: a kernel older than the headers, or newer, decides):
 *   POPULATE_READ  madvise(MADV_POPULATE_READ), Linux 5.14+: page tables
 *                  filled as MAP_POPULATE would
 *   WILLNEED       madvise(MADV_WILLNEED): read-ahead only
 *   TOUCH          read one byte per page through process_vm_readv (Linux),
 *                  which returns EFAULT where a plain read would SIGBUS
 *   PREFETCH       PrefetchVirtualMemory (Windows 8+)
 * None of them faults the process when the mapping was closed meanwhile
 * (or its file truncated): the job then ends with the error, which only
 * the debug output shows.  The buffer is not kept exported, so that
 * closing the mapping is never refused.
 *
 * Optional: without it, mmappolicy.py falls back to stock's behaviour.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <string.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#endif
#endif

#if defined(__linux__) && !defined(MADV_POPULATE_READ)
/* the kernel's value; headers older than 5.14 lack it */
#define MADV_POPULATE_READ 22
#endif

enum {
	METHOD_AUTO = 0,
	METHOD_POPULATE_READ = 1,
	METHOD_WILLNEED = 2,
	METHOD_TOUCH = 3,
	METHOD_PREFETCH = 4,
	METHOD_NONE = 5
};

#ifdef _MSC_VER
#define load_flag(p) InterlockedCompareExchange((volatile LONG *)(p), 0, 0)
#define store_flag(p, v) InterlockedExchange((volatile LONG *)(p), (v))
#define add_count(p, v) InterlockedExchangeAdd((volatile LONG *)(p), (v))
#else
#define load_flag(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_flag(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define add_count(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#endif

/* threads started and not joined yet, for the tests' "none left" */
static volatile long live_threads;

typedef struct {
	char *addr;
	size_t length;
	size_t chunk;
	int first_method;
	int nice; /* added to the worker's nice value (Linux), 0: none */
	volatile long stop;
	volatile long finished;
	/* results, written by the worker before it sets finished */
	int method;
	size_t done;
	int error;
	int stopped;
	long long elapsed_ns;
} job_state;

static long long now_ns(void)
{
#ifdef _WIN32
	LARGE_INTEGER freq, count;
	QueryPerformanceFrequency(&freq);
	QueryPerformanceCounter(&count);
	return (long long)(count.QuadPart * 1000000000.0 / freq.QuadPart);
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
#endif
}

static size_t page_size(void)
{
#ifdef _WIN32
	SYSTEM_INFO info;
	GetSystemInfo(&info);
	return info.dwPageSize;
#else
	long size = sysconf(_SC_PAGESIZE);
	return size > 0 ? (size_t)size : 4096;
#endif
}

#ifdef _WIN32
typedef struct {
	PVOID VirtualAddress;
	SIZE_T NumberOfBytes;
} range_entry;
typedef BOOL(WINAPI *prefetch_fn)(HANDLE, ULONG_PTR, range_entry *, ULONG);

static prefetch_fn find_prefetch(void)
{
	HMODULE kernel = GetModuleHandleW(L"kernel32.dll");
	if (kernel == NULL)
		return NULL;
	return (prefetch_fn)GetProcAddress(kernel, "PrefetchVirtualMemory");
}
#endif

/* 0, or the errno of populating [addr, addr + len) with method */
static int populate_range(int method, char *addr, size_t len)
{
	switch (method) {
#ifdef MADV_POPULATE_READ
	case METHOD_POPULATE_READ:
		return madvise(addr, len, MADV_POPULATE_READ) == 0 ? 0 : errno;
#endif
#if !defined(_WIN32) && defined(MADV_WILLNEED)
	case METHOD_WILLNEED:
		return madvise(addr, len, MADV_WILLNEED) == 0 ? 0 : errno;
#endif
#if defined(__linux__) && defined(SYS_process_vm_readv)
	case METHOD_TOUCH: {
		enum { BATCH = 512 };
		struct iovec local[BATCH], remote[BATCH];
		char sink[BATCH];
		size_t page = page_size(), off = 0;
		while (off < len) {
			int n = 0;
			ssize_t got;
			for (; n < BATCH && off < len; n++, off += page) {
				local[n].iov_base = sink + n;
				local[n].iov_len = 1;
				remote[n].iov_base = addr + off;
				remote[n].iov_len = 1;
			}
			got = syscall(SYS_process_vm_readv, getpid(), local,
				      (unsigned long)n, remote, (unsigned long)n,
				      0UL);
			if (got < 0)
				return errno;
			if (got < n)
				return EFAULT;
		}
		return 0;
	}
#endif
#ifdef _WIN32
	case METHOD_PREFETCH: {
		prefetch_fn prefetch = find_prefetch();
		range_entry range;
		if (prefetch == NULL)
			return ENOSYS;
		range.VirtualAddress = addr;
		range.NumberOfBytes = len;
		if (!prefetch(GetCurrentProcess(), 1, &range, 0))
			return EINVAL;
		return 0;
	}
#endif
	default:
		return ENOSYS;
	}
}

/* the method after one the kernel refuses (not the mapping's fault) */
static int next_method(int method)
{
	switch (method) {
	case METHOD_POPULATE_READ:
		return METHOD_WILLNEED;
	case METHOD_WILLNEED:
		return METHOD_TOUCH;
	default:
		return METHOD_NONE;
	}
}

static int first_method(void)
{
#ifdef _WIN32
	return METHOD_PREFETCH;
#else
	return METHOD_POPULATE_READ;
#endif
}

/* the whole job, in whatever thread runs it */
static void run_job(job_state *job)
{
	long long start = now_ns();
	size_t page = page_size();
	size_t chunk = job->chunk < page ? page : job->chunk - job->chunk % page;
	int method = job->first_method ? job->first_method : first_method();
	while (job->done < job->length) {
		size_t len = job->length - job->done;
		int err;
		if (load_flag(&job->stop)) {
			job->stopped = 1;
			break;
		}
		if (len > chunk)
			len = chunk;
		err = populate_range(method, job->addr + job->done, len);
		/* EINVAL, ENOSYS: this method is unknown here (an older
		 * kernel, another system); EPERM: refused (seccomp) */
		while ((err == EINVAL || err == ENOSYS || err == EPERM) &&
		       next_method(method) != METHOD_NONE) {
			method = next_method(method);
			err = populate_range(method, job->addr + job->done,
					     len);
		}
		if (err) {
			/* ENOMEM, EFAULT: the mapping is gone or its file
			 * shrank; anything else: nothing more to do */
			job->error = err;
			break;
		}
		job->done += len;
	}
	job->method = method;
	job->elapsed_ns = now_ns() - start;
	store_flag(&job->finished, 1);
}

/* -- the Job type: one mapping populated by a thread of its own -------- */

typedef struct {
	PyObject_HEAD job_state *state;
	int joined;
#ifdef _WIN32
	HANDLE thread;
#else
	pthread_t thread;
#endif
} JobObject;

/* A core kept busy by the command (or by another process) goes to the
 * command first: the worker yields it, and gets it where a core is idle.
 * Linux nices threads one by one, Windows lowers a thread priority;
 * elsewhere it is left alone. */
static void lower_priority(int nice)
{
	if (nice <= 0)
		return;
#ifdef _WIN32
	SetThreadPriority(GetCurrentThread(), nice >= 10
						  ? THREAD_PRIORITY_LOWEST
						  : THREAD_PRIORITY_BELOW_NORMAL);
#elif defined(__linux__) && defined(SYS_gettid)
	{
		pid_t tid = (pid_t)syscall(SYS_gettid);
		int nice_now;
		errno = 0;
		nice_now = getpriority(PRIO_PROCESS, (id_t)tid);
		if (errno == 0)
			setpriority(PRIO_PROCESS, (id_t)tid,
				    nice_now + nice > 19 ? 19
							 : nice_now + nice);
	}
#endif
}

#ifdef _WIN32
static DWORD WINAPI worker(LPVOID arg)
{
	lower_priority(((job_state *)arg)->nice);
	run_job((job_state *)arg);
	return 0;
}
#else
static void *worker(void *arg)
{
	lower_priority(((job_state *)arg)->nice);
	run_job((job_state *)arg);
	return NULL;
}
#endif

/* wait for the thread (the GIL released by the caller) */
static void join_thread(JobObject *self)
{
#ifdef _WIN32
	WaitForSingleObject(self->thread, INFINITE);
	CloseHandle(self->thread);
#else
	pthread_join(self->thread, NULL);
#endif
}

static void job_join_now(JobObject *self)
{
	if (self->joined)
		return;
	Py_BEGIN_ALLOW_THREADS join_thread(self);
	Py_END_ALLOW_THREADS self->joined = 1;
	add_count(&live_threads, -1);
}

static void job_dealloc(JobObject *self)
{
	if (self->state != NULL) {
		store_flag(&self->state->stop, 1);
		job_join_now(self);
		free(self->state);
	}
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *job_stop(JobObject *self, PyObject *unused)
{
	store_flag(&self->state->stop, 1);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(job_join_doc, "join(timeout=-1.0) -> bool\n\n"
			   "Wait (GIL released) for the thread; True once it "
			   "ended and was joined.\nA negative timeout waits "
			   "as long as it takes.");

static PyObject *job_join(JobObject *self, PyObject *args)
{
	double timeout = -1.0;
	long long deadline;
	if (!PyArg_ParseTuple(args, "|d:join", &timeout))
		return NULL;
	if (self->joined)
		Py_RETURN_TRUE;
	deadline = now_ns() + (long long)(timeout * 1e9);
	/* the worker ends within one chunk of a stop: poll for "finished"
	 * so that a timeout is honoured without a timed join */
	while (timeout >= 0 && !load_flag(&self->state->finished)) {
		if (now_ns() >= deadline)
			Py_RETURN_FALSE;
		Py_BEGIN_ALLOW_THREADS
#ifdef _WIN32
		Sleep(1);
#else
		usleep(200);
#endif
		Py_END_ALLOW_THREADS
	}
	job_join_now(self);
	Py_RETURN_TRUE;
}

static PyObject *result_tuple(job_state *s)
{
	return Py_BuildValue("(inniL)", s->method, (Py_ssize_t)s->done,
			     (Py_ssize_t)s->error, s->stopped, s->elapsed_ns);
}

static PyObject *job_result(JobObject *self, void *closure)
{
	if (!load_flag(&self->state->finished))
		Py_RETURN_NONE;
	return result_tuple(self->state);
}

static PyObject *job_length(JobObject *self, void *closure)
{
	return PyLong_FromSize_t(self->state->length);
}

static PyMethodDef job_methods[] = {
    {"stop", (PyCFunction)job_stop, METH_NOARGS,
     "ask the thread to stop before its next chunk"},
    {"join", (PyCFunction)job_join, METH_VARARGS, job_join_doc},
    {NULL}};

static PyGetSetDef job_getset[] = {
    {"result", (getter)job_result, NULL,
     "None while running, then (method, bytes populated, errno, stopped, "
     "elapsed ns)",
     NULL},
    {"length", (getter)job_length, NULL, "bytes of the mapping", NULL},
    {NULL}};

static PyTypeObject JobType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hgext3rd.fastio._populate.Job",
    .tp_basicsize = sizeof(JobObject),
    .tp_dealloc = (destructor)job_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a mapping being populated by a thread of its own",
    .tp_methods = job_methods,
    .tp_getset = job_getset,
};

/* a new job_state for the buffer's memory, or NULL with an exception */
static job_state *new_state(PyObject *mapping, int method, Py_ssize_t chunk)
{
	Py_buffer view;
	job_state *s;
	if (method < METHOD_AUTO || method >= METHOD_NONE) {
		PyErr_SetString(PyExc_ValueError, "unknown method");
		return NULL;
	}
	if (PyObject_GetBuffer(mapping, &view, PyBUF_SIMPLE) == -1)
		return NULL;
	s = (job_state *)calloc(1, sizeof(job_state));
	if (s == NULL) {
		PyBuffer_Release(&view);
		PyErr_NoMemory();
		return NULL;
	}
	s->addr = (char *)view.buf;
	s->length = (size_t)view.len;
	s->chunk = chunk > 0 ? (size_t)chunk : (size_t)1 << 20;
	s->first_method = method;
	/* not kept exported: closing the mapping stays possible, and the
	 * methods above fail (never fault) on a closed mapping */
	PyBuffer_Release(&view);
	return s;
}

PyDoc_STRVAR(start_doc,
	     "start(mapping, method=0, chunk=1MB, nice=10) -> Job\n\n"
	     "Populate the buffer `mapping` from a new thread.  method 0 "
	     "starts with\nthe best for this system and falls back; another "
	     "forces where to start.\nnice: added to the thread's nice value "
	     "(0: the command's priority).");

static PyObject *start(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *keywords[] = {"mapping", "method", "chunk", "nice", NULL};
	PyObject *mapping;
	int method = METHOD_AUTO, rc, nice = 10;
	Py_ssize_t chunk = 0;
	JobObject *job;
	job_state *s;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ini:start", keywords,
					 &mapping, &method, &chunk, &nice))
		return NULL;
	s = new_state(mapping, method, chunk);
	if (s == NULL)
		return NULL;
	s->nice = nice;
	job = PyObject_New(JobObject, &JobType);
	if (job == NULL) {
		free(s);
		return NULL;
	}
	job->state = s;
	job->joined = 1;
#ifdef _WIN32
	job->thread = CreateThread(NULL, 64 * 1024, worker, s, 0, NULL);
	rc = job->thread == NULL ? (int)GetLastError() : 0;
#else
	{
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		rc = pthread_create(&job->thread, &attr, worker, s);
		pthread_attr_destroy(&attr);
	}
#endif
	if (rc != 0) {
		Py_DECREF(job);
		errno = rc;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	job->joined = 0;
	add_count(&live_threads, 1);
	return (PyObject *)job;
}

PyDoc_STRVAR(populate_doc,
	     "populate(mapping, method=0, chunk=1MB)\n"
	     "    -> (method, bytes populated, errno, stopped, elapsed ns)\n\n"
	     "Populate the buffer `mapping` in this thread, the GIL released.");

static PyObject *populate(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *keywords[] = {"mapping", "method", "chunk", NULL};
	PyObject *mapping, *result;
	int method = METHOD_AUTO;
	Py_ssize_t chunk = 0;
	job_state *s;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|in:populate",
					 keywords, &mapping, &method, &chunk))
		return NULL;
	s = new_state(mapping, method, chunk);
	if (s == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS run_job(s);
	Py_END_ALLOW_THREADS result = result_tuple(s);
	free(s);
	return result;
}

static PyObject *threads_alive(PyObject *self, PyObject *unused)
{
	return PyLong_FromLong(load_flag(&live_threads));
}

static PyMethodDef methods[] = {
    {"start", (PyCFunction)start, METH_VARARGS | METH_KEYWORDS, start_doc},
    {"populate", (PyCFunction)populate, METH_VARARGS | METH_KEYWORDS,
     populate_doc},
    {"threads_alive", threads_alive, METH_NOARGS,
     "threads started by start() and not joined yet"},
    {NULL, NULL}};

static struct PyModuleDef populate_module = {
    PyModuleDef_HEAD_INIT, "_populate",
    "populate memory mappings off Python's lock", -1, methods};

PyMODINIT_FUNC PyInit__populate(void)
{
	PyObject *m;
	if (PyType_Ready(&JobType) < 0)
		return NULL;
	m = PyModule_Create(&populate_module);
	if (m == NULL)
		return NULL;
	Py_INCREF(&JobType);
	PyModule_AddObject(m, "Job", (PyObject *)&JobType);
	PyModule_AddIntConstant(m, "POPULATE_READ", METHOD_POPULATE_READ);
	PyModule_AddIntConstant(m, "WILLNEED", METHOD_WILLNEED);
	PyModule_AddIntConstant(m, "TOUCH", METHOD_TOUCH);
	PyModule_AddIntConstant(m, "PREFETCH", METHOD_PREFETCH);
	PyModule_AddIntConstant(m, "NONE", METHOD_NONE);
	return m;
}

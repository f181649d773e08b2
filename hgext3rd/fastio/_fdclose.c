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
	return PyModule_Create(&module);
}

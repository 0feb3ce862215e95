package guard

import "errors"

var (
	// ErrNotFound reports a key that does not exist: the filter says it was never added, or the
	// loader says the database has no such row. Loaders return it (or wrap it, or return
	// sql.ErrNoRows, which the guard treats the same) for a missing row.
	ErrNotFound = errors.New("guard: not found")

	// ErrInvalid reports a Config or argument that cannot work, such as a missing loader.
	ErrInvalid = errors.New("guard: invalid configuration")

	// ErrNoFilter reports an Attach to a shared filter that nobody has built yet.
	ErrNoFilter = errors.New("guard: no filter to attach to")
)

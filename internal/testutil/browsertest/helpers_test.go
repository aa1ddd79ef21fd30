package browsertest_test

import "os"

func writeFile(name string, b []byte) error { return os.WriteFile(name, b, 0o644) }

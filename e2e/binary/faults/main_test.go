package faults

import (
	"os"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

func TestMain(m *testing.M) { os.Exit(cmdtest.Main(m)) }

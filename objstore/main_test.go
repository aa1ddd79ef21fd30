package objstore_test

import (
	"os"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/s3test"
	"github.com/moq-export/moq-export/internal/testutil/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(recorderChild())
	}
	// Credentials as the AWS tools read them; each test's server is named
	// by ?endpoint= in its URL.
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": s3test.AccessKey, "AWS_SECRET_ACCESS_KEY": s3test.SecretKey, "AWS_REGION": "us-east-1",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_ENDPOINT_URL")
	os.Unsetenv("AWS_PROFILE")
	// Azurite's account; each test's server is named by ?endpoint=.
	os.Setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName="+storetest.AzureAccount+";AccountKey="+storetest.AzureKey)
	os.Unsetenv("STORAGE_EMULATOR_HOST")
	code := m.Run()
	storetest.Stop()
	os.Exit(code)
}

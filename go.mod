module github.com/moq-export/moq-export

go 1.26

require (
	github.com/abema/go-mp4 v1.7.1 // indirect
	github.com/bluenviron/gortmplib v1.0.1 // indirect
	github.com/bluenviron/mediacommon/v2 v2.9.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

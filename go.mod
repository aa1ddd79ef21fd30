module github.com/moq-export/moq-export

go 1.26

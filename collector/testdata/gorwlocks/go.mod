module gover

go 1.21

package main

import "errors"

func serve(args []string) error { return errors.New("serve: not built yet") }

func verify(args []string) error { return errors.New("verify: not built yet") }

#!/bin/sh
set -e
echo "tab	here"

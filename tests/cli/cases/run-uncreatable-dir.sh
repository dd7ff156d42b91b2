# the parent is missing: exit 2, the command is not run
gpustarve run -o no/such/dir -- touch marker
echo "exit $?"
ls

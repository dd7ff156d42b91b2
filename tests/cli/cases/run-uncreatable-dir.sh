# a parent is a file: exit 2, the command is not run
touch f
gpustarve run -o f/sub/dir -- touch marker
echo "exit $?"
ls

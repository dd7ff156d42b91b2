mkdir d
echo hi > d/notes.txt
gpustarve dump d

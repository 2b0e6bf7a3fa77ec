sleep 5
sleep 7
# only sleeps

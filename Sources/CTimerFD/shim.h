#include <sys/timerfd.h>

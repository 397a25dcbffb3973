/* placeholder, replaced by the real CLI */
#include <stdio.h>
int main(void) { puts("ptdecode: not yet"); return 1; }

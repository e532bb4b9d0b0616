-- placeholder so the embed pattern matches until scripts land
return 0

-- placeholder; replaced below
SELECT 1;

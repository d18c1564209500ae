/*
 * store_schema: the migrations embedded from db/NNN_*.sql by db/embed.py.
 * store_migrations[i] brings a database from user_version i to i+1.
 */
#ifndef EVO_STORE_SCHEMA_H
#define EVO_STORE_SCHEMA_H

extern const char *const store_migrations[];
extern const int store_migration_count;

#endif
